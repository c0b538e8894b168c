// Typed dispatch: from a run-time description of an element type (a numpy dtype, a bit width) to a C++
// type, once, for every op. Plain C++ (also compiled by nvcc): no Python, no pybind11.
//
// dispatch(List{}, match, fn) calls fn(T{}) for the first T of the list with match(T{}) true, so the body
// is written once as a generic lambda and instantiated per type. common/bind.h matches numpy dtypes with
// it; the CUDA launchers match bit widths (dispatch_widths).
#pragma once
#include <cstdint>

namespace fastnips {

template <typename... Ts>
struct TypeList {};

using FloatTypes = TypeList<float, double>;      // values
using IndexTypes = TypeList<int32_t, int64_t>;   // CSR indptr / indices
// Raw element bits of 2, 4 or 8 bytes (float16/bfloat16, float32, float64 moved without arithmetic);
// these match on the element size alone.
using BitsTypes = TypeList<uint16_t, uint32_t, uint64_t>;

template <class List>
struct FirstOf;
template <typename T, typename... Rest>
struct FirstOf<TypeList<T, Rest...>> {
  using type = T;
};
template <class List>
using first_type = typename FirstOf<List>::type;

// fn(T{}) for the first T of the list with match(T{}); false when none matches (the caller reports it).
template <typename T, typename... Rest, class Match, class Fn>
bool dispatch(TypeList<T, Rest...>, const Match& match, Fn&& fn) {
  if (match(T{})) {
    fn(T{});
    return true;
  }
  if constexpr (sizeof...(Rest) > 0) {
    return dispatch(TypeList<Rest...>{}, match, fn);
  } else {
    return false;
  }
}

// fn(T{}, I{}) for the value type of `dtype_bits` (32: float, 64: double) and the index type of
// `index_bits` (32 or 64); false when either width is unsupported.
template <class Fn>
bool dispatch_widths(int dtype_bits, int index_bits, Fn&& fn) {
  bool index_ok = false;
  const bool value_ok = dispatch(
      FloatTypes{}, [&](auto t) { return int(sizeof(t)) * 8 == dtype_bits; },
      [&](auto t) {
        index_ok = dispatch(
            IndexTypes{}, [&](auto i) { return int(sizeof(i)) * 8 == index_bits; }, [&](auto i) { fn(t, i); });
      });
  return value_ok && index_ok;
}

}  // namespace fastnips
