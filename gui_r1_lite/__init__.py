"""gui_r1_lite: GUI-R1 (R1-style GRPO for GUI agents on Qwen2.5-VL) in one small, tested package: what one
training run or one offline evaluation executes, on the GPU or the CPU. What runs and proves it (the main
job, the CPU miniature, the closed loop in a live browser) is `harness`, beside it; this package never
imports it."""

__version__ = "0.1.0"
