"""The SFT rows of fastnips.rl.teacher as trl reads them: the prompt ends on a token boundary of a byte-level BPE
tokenizer (GPT-2 style, trained here on the rows: no download), and trl's SFTTrainer trains a tiny random Llama on
``to_hf_dataset()`` with the loss on the completion only (slow tier; needs trl and datasets)."""

from __future__ import annotations

import pytest

from fastnips.rl.teacher import CombinationLock, ScriptedTeacher, TabularStudent, build_dataset


def _rows():
    return build_dataset("continuation", CombinationLock(4, n_runes=8), ScriptedTeacher(), 40,
                         student=TabularStudent(), k=2, seed=0)


def _bpe(texts):
    tokenizers = pytest.importorskip("tokenizers", reason="HF tokenizers (a dependency of transformers)")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=320, special_tokens=["<eos>", "<pad>"], show_progress=False,
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    return tok


def test_prompts_end_on_a_token_boundary():
    ds = _rows()
    tok = _bpe(ds.texts())
    for r in ds:
        whole = tok.encode(r["prompt"] + r["completion"]).ids
        prompt = tok.encode(r["prompt"]).ids
        assert whole[:len(prompt)] == prompt
    # the reason for the newline: a prompt ending in a space loses it to the completion's first token
    spaced = [(r["prompt"].rstrip("\n") + " ", r["completion"]) for r in ds]
    tok2 = _bpe([p + c for p, c in spaced])
    broken = sum(tok2.encode(p + c).ids[:len(tok2.encode(p).ids)] != tok2.encode(p).ids for p, c in spaced)
    assert broken == len(spaced)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`gradient_checkpointing` is deprecated:FutureWarning")  # trl 1.16 x transformers 5
def test_trl_sft_trainer_reads_the_dataset(tmp_path):
    pytest.importorskip("trl", reason="trl is optional (pip install trl)")
    pytest.importorskip("datasets", reason="datasets is optional (pip install datasets)")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(1)
    ds = _rows()
    tok = PreTrainedTokenizerFast(tokenizer_object=_bpe(ds.texts()), eos_token="<eos>", pad_token="<pad>")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=128, eos_token_id=tok.eos_token_id,
                                         pad_token_id=tok.pad_token_id))
    cfg = SFTConfig(output_dir=str(tmp_path), max_steps=30, per_device_train_batch_size=8, learning_rate=3e-3,
                    report_to=[], use_cpu=True, logging_steps=10, save_strategy="no", disable_tqdm=True, seed=0)
    trainer = SFTTrainer(model=model, args=cfg, train_dataset=ds.to_hf_dataset(), processing_class=tok)
    for i in range(len(ds)):  # trl masks exactly the prompt: the loss falls on the completion and EOS
        ex = trainer.train_dataset[i]
        kept = [t for t, lab in zip(ex["input_ids"], ex["labels"], strict=True) if lab != -100]
        assert tok.decode(kept) == ds[i]["completion"] + "<eos>"
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 3
    assert losses[-1] < losses[0]
