// The one error type of the native ops. Plain C++: no Python, no pybind11.
//
// A kernel that can refuse its input returns a Status: the kind picks the Python exception (turned into it
// by fastnips::bind::check in common/bind.h), the message says what was wrong, with the offending values.
// Functions that return a result instead throw a StatusError carrying the Status (the HTC solvers); the
// bindings catch it and raise it the same way.
#pragma once
#include <exception>
#include <string>
#include <utility>

namespace fastnips {

struct Status {
  enum Kind : int {
    kOk = 0,
    kValue,    // the input is refused: ValueError
    kType,     // an unsupported dtype or width: TypeError
    kRuntime,  // the input was fine but the computation failed (a CUDA launch, no usable pivot): RuntimeError
    kInterrupted,  // stopped by a signal (common/interrupt.h): the binding raises the pending Python exception
  };
  Kind kind = kOk;
  std::string message;

  bool ok() const { return kind == kOk; }
  static Status value_error(std::string m) { return {kValue, std::move(m)}; }
  static Status type_error(std::string m) { return {kType, std::move(m)}; }
  static Status runtime_error(std::string m) { return {kRuntime, std::move(m)}; }
  static Status interrupted() { return {kInterrupted, "interrupted"}; }
};

class StatusError : public std::exception {
 public:
  explicit StatusError(Status st) : st_(std::move(st)) {}
  const Status& status() const { return st_; }
  const char* what() const noexcept override { return st_.message.c_str(); }

 private:
  Status st_;
};

}  // namespace fastnips
