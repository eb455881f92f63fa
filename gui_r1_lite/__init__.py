"""gui_r1_lite: GUI-R1 (R1-style GRPO for GUI agents on Qwen2.5-VL) in one small, tested package."""

__version__ = "0.1.0"
