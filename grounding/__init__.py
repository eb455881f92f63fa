"""Pretraining the miniature's base on generated grounding pages (imports gui_r1_lite; never imported by it)."""
