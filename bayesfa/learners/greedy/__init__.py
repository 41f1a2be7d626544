"""Greedy learners (deterministic, no trace): ``estatemerge`` (Eq. 21), ``evgram`` and
``cvgram`` (VGrams, Sect. 4.5.2-4.5.3), ``alergia`` (Carrasco & Oncina 1994), and what they
share: ``_prefix_tree`` (the prefix tree, its fold and the red-blue loop) and ``_vgram``.
"""
