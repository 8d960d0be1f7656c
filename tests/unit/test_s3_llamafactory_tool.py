"""S3's LLaMA-Factory case writes what LLaMA-Factory reads: its dataset format, a tokenizer at Qwen2-Audio's ids, and a
config that adds the tokens as its users do (memtests/s3_qwen2_audio/tool.py; the run itself is a probe)."""

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="needs the scenarios extra")
soundfile = pytest.importorskip("soundfile", reason="needs the scenarios extra")
MEMTESTS = str(Path(__file__).resolve().parents[2] / "memtests")
sys.path.insert(0, MEMTESTS)
try:
    from s3_qwen2_audio import tool
finally:
    sys.path.remove(MEMTESTS)

PARAMS = tool.LLAMAFACTORY.params_for("tiny")


def test_the_dataset_is_sharegpt_with_audio_paths_from_its_folder(tmp_path):
    tool.dataset(tmp_path, PARAMS)
    info = json.loads((tmp_path / "dataset_info.json").read_text())["s3_audio"]
    assert info["formatting"] == "sharegpt" and info["columns"] == {"messages": "messages", "audios": "audios"}
    rows = json.loads((tmp_path / info["file_name"]).read_text())
    assert len(rows) == PARAMS["samples"]
    for row in rows:
        assert [m["role"] for m in row["messages"]] == ["user", "assistant"]
        assert row["messages"][0]["content"].count("<audio>") == len(row["audios"]) == 1
        path = Path(row["audios"][0])
        assert not path.is_absolute() and (tmp_path / path).is_file()  # read from dataset_dir: the folder moves
        wave, rate = soundfile.read(tmp_path / path)
        assert rate == tool.RATE and len(wave) == int(PARAMS["clip_s"] * tool.RATE) <= tool.WINDOW_S * tool.RATE
    said = " ".join(row["messages"][1]["content"] for row in rows)
    assert all(token in said for token in tool.new_tokens(PARAMS["added_tokens"]))  # every new token is trained on


def test_the_tokenizer_puts_qwen2_audios_special_tokens_at_their_ids():
    fast = tool.tokenizer()
    assert {t: fast.convert_tokens_to_ids(t) for t in tool.SPECIAL} == tool.SPECIAL
    assert fast.convert_tokens_to_ids("<|AUDIO|>") == tool.AUDIO_TOKEN
    assert len(fast) == max(tool.SPECIAL.values()) + 1 < PARAMS["vocab"]  # the checkpoint's rows cover it, as 7B's do
    ids = fast("<|im_start|>user\n<|audio_bos|><|AUDIO|><|audio_eos|><|im_end|>")["input_ids"]
    assert [tool.SPECIAL["<|im_start|>"], tool.SPECIAL["<|audio_bos|>"], tool.AUDIO_TOKEN] == \
        [i for i in ids if i in tool.SPECIAL.values()][:3]


@pytest.mark.parametrize("cuda", [False, True])
def test_the_config_adds_tokens_as_users_do_and_quantizes_only_on_cuda(cuda):
    config = tool.train_config({**PARAMS, "cuda": cuda})
    assert config["add_special_tokens"].split(",") == tool.new_tokens(PARAMS["added_tokens"])
    assert "resize_vocab" not in config  # LLaMA-Factory turns it on itself once tokens are added
    assert ("quantization_bit" in config) is cuda and config.get("quantization_bit", 4) == 4
    assert config["finetuning_type"] == "lora" and config["max_steps"] == PARAMS["steps"]
    assert not any(isinstance(v, str) and v.startswith("/") for v in config.values())  # folders come as overrides
    argv = tool.LLAMAFACTORY.command_line("tiny", "/prepared")["argv"]
    assert argv[-4:] == ["/prepared/config.yaml", "model_name_or_path=/prepared/model", "dataset_dir=/prepared/data",
                         "output_dir=/prepared/out"]
