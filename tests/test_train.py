"""Training configuration and TRL wiring on the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gui_r1_lite.training import ConfigError, TrainConfig, last_checkpoint, read_metrics, start_and_end, train

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(min_pixels=3136, max_pixels=50176, device="cpu", logging_steps=1, save_steps=100)


@pytest.mark.parametrize("over, words", [
    ({"per_device_train_batch_size": 3, "num_generations": 2}, "not divisible by num_generations"),
    ({"device": "cuda"}, "no CUDA device"),
    ({"num_generations": 1, "per_device_train_batch_size": 1}, "num_generations >= 2"),
    ({"rewards": {"nope": 1.0}}, "unknown reward"),
    ({"method": "ppo"}, "method must be"),
    ({"quantization": "3bit"}, "quantization must be"),
    ({"quantization": "4bit", "lora": False}, "without an adapter"),
    ({"use_vllm": True}, "CUDA"),
    ({"min_pixels": 10, "max_pixels": 5}, "min_pixels"),
    ({"model": "not-a-model"}, "neither 'tiny'"),
    ({"compat": "loose"}, "compat must be"),
    ({"learning_rate": 0}, "learning_rate must be positive"),
    ({"max_steps": 0}, "max_steps > 0"),
    ({"report_to": "mlflow"}, "report_to must be"),
    ({"use_cpu": True}, "set device: cpu"),  # derived from ours: one home per fact
])
def test_invalid_configs_fail_before_loading(over, words):
    if over.get("device") == "cuda" and torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with pytest.raises(ConfigError, match=words):
        TrainConfig.from_dict({**dict(per_device_train_batch_size=4, num_generations=4), **over}).validate()


def test_trl_rejects_what_it_does_not_know_and_we_name_the_source(tmp_path):
    with pytest.raises(ConfigError, match=r"recipe.yaml: unknown key\(s\) \['lr'\]"):
        TrainConfig.from_yaml(_recipe(tmp_path, "lr: 1"))
    # a GRPO setting is not an SFT one: TRL's SFTConfig has no num_generations
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['num_generations'\].*SFTConfig"):
        TrainConfig.from_dict({"method": "sft", "num_generations": 4})
    with pytest.raises(ConfigError, match="rejected"):  # a value only TRL checks
        TrainConfig.from_dict({"lr_scheduler_type": "sideways"}).validate()


def _recipe(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def test_yaml_cli_and_notebook_build_the_same_config(tmp_path):
    recipe = ROOT / "configs" / "grpo_qwen2_5_vl_3b_qlora.yaml"
    a = TrainConfig.from_yaml(recipe, max_steps=50)
    b = TrainConfig.from_cli(["--config", str(recipe), "--max_steps", "50"])
    assert a == b and a.get("num_generations") == 5 and a.get("beta") == 0.01 and a.max_pixels == 1_258_291
    assert a.quantization == "4bit" and a.get("max_completion_length") == 1024 and a.trl_args["max_steps"] == 50
    assert TrainConfig.from_dict(b.to_dict(), source="notebook") == b
    cli = TrainConfig.from_cli(["--rewards", "{gui_r1: 1.0, point_gaussian: 0.5}", "--resume", "--quantization", "null"])
    assert cli.resume is True and cli.rewards == {"gui_r1": 1.0, "point_gaussian": 0.5} and cli.quantization is None
    assert cli.trl_args == {}  # only the flags given reach the settings; the rest are defaults
    assert TrainConfig.from_cli(["--learning_rate", "1e-2", "--beta", "1e-3"]).get("learning_rate") == 0.01
    for name in ("grpo_tiny_cpu", "sft_tiny_cpu", "sft_qwen2_5_vl_3b_qlora"):
        TrainConfig.from_yaml(ROOT / "configs" / f"{name}.yaml")


def test_numbers_written_as_text_are_numbers(tmp_path):
    # YAML 1.1 reads 1e-5 (no dot) as a string
    cfg = TrainConfig.from_yaml(_recipe(tmp_path, "learning_rate: 1e-5\nmin_pixels: 1e4\nlora_dropout: 1e-1\n"))
    assert cfg.get("learning_rate") == 1e-5 and cfg.min_pixels == 10_000 and cfg.lora_dropout == 0.1
    with pytest.raises(ConfigError, match="recipe.yaml: learning_rate must be a number, got 'fast'"):
        TrainConfig.from_yaml(_recipe(tmp_path, "learning_rate: fast"))
    with pytest.raises(ConfigError, match="min_pixels must be a whole number"):
        TrainConfig.from_dict({"min_pixels": "1.5"})


@pytest.mark.parametrize("argv, flag", [
    (["--per_device_train_batch_size", "four"], "--per_device_train_batch_size"),
    (["--learning_rate", "fast"], "--learning_rate"),
    (["--lora_r", "big"], "--lora_r"),
    (["--lr", "1"], "unrecognized arguments: --lr"),
])
def test_a_bad_flag_is_named(argv, flag):
    with pytest.raises(ConfigError, match=f"command line: .*{flag}"):
        TrainConfig.from_cli(argv)


def test_help_explains_our_flags_and_trls(capsys):
    from gui_r1_lite.train import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for flag, words in [("--lora_r", "LoRA rank"), ("--quantization", "QLoRA"), ("--rewards", "registered name"),
                        ("--resume", "newest complete checkpoint"),   # ours
                        ("--beta", "KL coefficient"), ("--num_generations", "Number of generations"),
                        ("--learning_rate", "initial learning rate"), ("--save_total_limit", "checkpoints")]:  # TRL's
        assert f"{flag} " in text and words in text, flag
    assert "The initial learning rate for AdamW. (default: 1e-05)" in text  # the default a run gets, ours
    with pytest.raises(SystemExit):
        main(["--method", "sft", "--help"])
    assert "--completion_only_loss" in capsys.readouterr().out


# What today's runs get from TRL, setting by setting (ours where they differ from TRL's defaults).
COMMON = dict(seed=0, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0,
              logging_steps=1, save_strategy="steps", report_to=[], remove_unused_columns=False,
              dataloader_num_workers=0, activation_checkpointing=False, gradient_checkpointing=False,
              ddp_find_unused_parameters=False, use_cpu=True, bf16=False)
GRPO = dict(num_generations=5, temperature=1.0, top_p=1.0, beta=0.01, max_completion_length=1024, loss_type="grpo",
            use_vllm=False, reward_weights=[1.0, 0.0, 0.0])  # gui_r1, then format and accuracy watched (weight 0)
SFT = dict(max_length=None, completion_only_loss=True)
MINIATURE = dict(model="tiny", tiny={}, tiny_seed=0, lora=False, train_vision=True, init_adapter=None, train_data="x",
                 min_pixels=3136, max_pixels=50176, learning_rate=1e-4, max_steps=80, lr_scheduler_type="constant",
                 seed=0, output_dir="out", save_steps=10**9, save_total_limit=None, device="cpu", logging_steps=1,
                 sft_thinking="")
RESOLVED = [
    ("grpo_tiny_cpu", {**COMMON, **GRPO, "learning_rate": 1e-4, "max_steps": 20, "save_steps": 10, "num_generations": 4,
                       "per_device_train_batch_size": 4, "max_completion_length": 48, "save_total_limit": 2,
                       "output_dir": "runs/grpo_tiny_cpu", "gradient_accumulation_steps": 1}),
    ("sft_tiny_cpu", {**COMMON, **SFT, "learning_rate": 1e-3, "max_steps": 40, "save_steps": 20,
                      "per_device_train_batch_size": 4, "num_train_epochs": 1.0, "output_dir": "runs/sft_tiny_cpu"}),
    # chosen against the original's (see the recipe's comments): token-mean loss, no dropout, 4 prompts an
    # update, a session-sized length with frequent checkpoints
    ("grpo_qwen2_5_vl_3b_qlora", {**COMMON, **GRPO, "learning_rate": 1e-5, "max_steps": 40, "num_train_epochs": 1.0,
                                  "per_device_train_batch_size": 5, "gradient_accumulation_steps": 4,
                                  "save_steps": 5, "save_total_limit": 2, "loss_type": "dapo",
                                  "disable_dropout": True, "steps_per_generation": 4, "num_iterations": 1}),
    ("sft_qwen2_5_vl_3b_qlora", {**COMMON, **SFT, "learning_rate": 1e-4, "per_device_train_batch_size": 4,
                                 "gradient_accumulation_steps": 4, "logging_steps": 5, "save_steps": 100}),
    ({**MINIATURE, "method": "grpo", "rewards": {"gui_r1": 1.0}, "per_device_train_batch_size": 16,
      "num_generations": 8, "temperature": 0.7, "beta": 0.0, "max_completion_length": 44},
     {**COMMON, **GRPO, "learning_rate": 1e-4, "max_steps": 80, "save_steps": 10**9, "save_total_limit": None,
      "per_device_train_batch_size": 16, "num_generations": 8, "temperature": 0.7, "beta": 0.0,
      "max_completion_length": 44}),
    ({**MINIATURE, "method": "sft", "per_device_train_batch_size": 8},
     {**COMMON, **SFT, "learning_rate": 1e-4, "max_steps": 80, "per_device_train_batch_size": 8}),
    ({}, {**COMMON, **GRPO, "learning_rate": 1e-5, "per_device_train_batch_size": 5, "num_train_epochs": 1.0,
          "max_steps": -1, "save_steps": 50, "save_total_limit": 2, "output_dir": "runs/train"}),
]


@pytest.mark.parametrize("recipe, expected", RESOLVED, ids=lambda v: v if isinstance(v, str) else None)
def test_recipes_resolve_to_the_trl_settings_runs_have_always_had(recipe, expected, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the CPU-derived values, on any machine
    if isinstance(recipe, str):
        # the GPU recipes say device: cuda (no CUDA here fails at once); their TRL values are checked on the CPU
        cfg = TrainConfig.from_yaml(ROOT / "configs" / f"{recipe}.yaml", device="cpu")
    else:
        cfg = TrainConfig.from_dict(recipe, source="miniature")
    args = cfg.validate().trainer_args()
    got = {k: getattr(args, k) for k in expected}
    got["lr_scheduler_type"] = str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type))
    got["save_strategy"] = str(getattr(args.save_strategy, "value", args.save_strategy))
    assert got == expected


def test_trainer_args_use_the_checkpointing_name_of_the_installed_transformers(monkeypatch):
    # transformers 5.15-5.23 (Colab's, the GPU image's) have no activation_checkpointing field and reject it
    from gui_r1_lite.training import config as config_module

    class OldGRPOConfig:
        __dataclass_fields__ = {"gradient_checkpointing": None, "learning_rate": None}

        def __init__(self, **kwargs):
            if "activation_checkpointing" in kwargs:
                raise TypeError("__init__() got an unexpected keyword argument 'activation_checkpointing'")
            self.kwargs = kwargs

    cfg = TrainConfig.from_dict(dict(MINIATURE), source="miniature")
    monkeypatch.setattr(config_module, "trl_config_class", lambda method: OldGRPOConfig)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = cfg.trainer_args()
    assert args.kwargs["gradient_checkpointing"] is False
    assert config_module.checkpointing_field(OldGRPOConfig) == "gradient_checkpointing"
    from trl import GRPOConfig
    assert config_module.checkpointing_field(GRPOConfig) == (
        "activation_checkpointing" if "activation_checkpointing" in GRPOConfig.__dataclass_fields__
        else "gradient_checkpointing")


def lora_and_base(model):
    lora = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}
    base = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" not in n}
    return lora, base


@pytest.mark.parametrize("quantization", [None, "4bit"])
def test_grpo_moves_lora_weights_only(toy_data, tmp_path, varying_reward, quantization, monkeypatch):
    from gui_r1_lite import modeling

    seen = {}

    original = modeling.load_policy

    def spy(*args, **kw):
        policy = original(*args, **kw)
        seen["model"] = policy.model
        seen["before"] = lora_and_base(policy.model)
        return policy
    monkeypatch.setattr(modeling, "load_policy", spy)
    cfg = TrainConfig.from_dict(dict(
        train_data=toy_data, output_dir=str(tmp_path / "run"), max_steps=2, num_generations=4,
        per_device_train_batch_size=4, max_completion_length=12, learning_rate=5e-2, rewards={varying_reward: 1.0},
        quantization=quantization, **SMALL))
    result = train(cfg)
    assert result.global_step == 2
    lora0, base0 = seen["before"]
    lora1, base1 = lora_and_base(seen["model"])
    assert lora0 and any(not torch.equal(lora0[n], lora1[n]) for n in lora0), "LoRA weights did not move"
    assert all(torch.equal(base0[n], base1[n]) for n in base0), "base weights changed"
    logs = read_metrics(result.metrics_path)
    assert [r["step"] for r in logs if "loss" in r] == [1, 2]
    assert {"rewards/length_test/mean", "kl", "learning_rate", "step_seconds"} <= set(logs[0])
    assert (Path(result.adapter_dir) / "adapter_config.json").exists()
    # the run's settings, written as a recipe, give back the same run
    again = TrainConfig.from_yaml(Path(result.output_dir) / "train_config.yaml")
    assert again.trainer_args().to_dict() == cfg.trainer_args().to_dict()
    assert {k: again.get(k) for k in cfg.to_dict()} == {k: cfg.get(k) for k in cfg.to_dict()}


def test_sft_lowers_its_loss(toy_data, tmp_path):
    cfg = TrainConfig.from_dict(dict(method="sft", train_data=toy_data, output_dir=str(tmp_path / "sft"), max_steps=12,
                                     per_device_train_batch_size=4, learning_rate=1e-2, **SMALL))
    result = train(cfg)
    losses = [r["loss"] for r in read_metrics(result.metrics_path) if "loss" in r]
    assert len(losses) == 12 and sum(losses[-3:]) / 3 < 0.95 * sum(losses[:3]) / 3, losses

    # merged into its base, the adapter's weights are plain weights of one model folder
    from transformers import AutoModelForImageTextToText

    from gui_r1_lite.modeling import load_policy
    from gui_r1_lite.training import merge_adapter

    merged = AutoModelForImageTextToText.from_pretrained(merge_adapter(result.base_model, result.adapter_dir,
                                                                       str(tmp_path / "merged")), dtype=torch.float32)
    base = AutoModelForImageTextToText.from_pretrained(result.base_model, dtype=torch.float32)
    assert not any("lora_" in n for n, _ in merged.named_parameters())
    trained = load_policy(result.base_model, lora=None, adapter=result.adapter_dir, device="cpu").model
    trained.merge_adapter()  # PEFT's in-place merge, to compare against
    expected = {n.replace("base_model.model.", "").replace(".base_layer", ""): p for n, p in trained.named_parameters()}
    changed = [n for n, p in merged.named_parameters() if not torch.equal(p, dict(base.named_parameters())[n])]
    assert changed and all(torch.allclose(dict(merged.named_parameters())[n], expected[n]) for n in changed)


def test_start_and_end_average_the_first_and_last_steps(tmp_path):
    lines = [{"step": i, "loss": 0.0, "reward": float(i), "kl": 0.1} for i in range(1, 21)]
    lines.append({"step": 20, "train_runtime": 9.0})  # the end-of-run summary has no loss
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    ends = start_and_end(tmp_path, window=4)
    assert ends["start"]["reward"] == 2.5 and ends["start"]["steps"] == [1, 4]
    assert ends["end"]["reward"] == 18.5 and ends["end"]["steps"] == [17, 20] and "train_runtime" not in ends["end"]
    assert start_and_end(tmp_path, window=100)["start"]["reward"] == 10.5


def test_a_torn_last_line_is_skipped(tmp_path):
    # a run killed while appending leaves half a line at the end; readers see the complete records
    whole = [{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.0}]
    text = "".join(json.dumps(r) + "\n" for r in whole) + json.dumps({"step": 3, "loss": 0.5})[:9]
    (tmp_path / "metrics.jsonl").write_text(text)
    assert read_metrics(tmp_path) == whole
    assert start_and_end(tmp_path, window=1)["end"] == {"step": 2.0, "loss": 1.0, "steps": [2, 2]}
    with pytest.raises(FileNotFoundError, match="no metrics.jsonl"):
        read_metrics(tmp_path / "elsewhere")


def test_last_checkpoint_skips_one_cut_short_and_resume_drops_it(tmp_path):
    from gui_r1_lite.training.checkpoints import drop_incomplete_checkpoints

    for step, state in [(2, '{"global_step": 2}'), (4, '{"global_step": 4}'), (6, '{"global_')]:
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(state)
    (tmp_path / "checkpoint-8").mkdir()  # killed before trainer_state.json was written
    (tmp_path / "checkpoint-x").mkdir()  # not a checkpoint
    assert last_checkpoint(tmp_path) == str(tmp_path / "checkpoint-4")
    assert drop_incomplete_checkpoints(tmp_path, last_checkpoint(tmp_path)) == ["checkpoint-6", "checkpoint-8"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-2", "checkpoint-4", "checkpoint-x"]
    assert last_checkpoint(tmp_path / "nowhere") is None
