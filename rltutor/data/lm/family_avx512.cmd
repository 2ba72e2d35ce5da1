ATEN_CPU_CAPABILITY=avx512 python -m rltutor.experiments.lm family --scale quick --updates 60 --seeds 0 1 2 3 4 --workers 2 --run-dir runs/lm/family_avx512 --out rltutor/data/lm/family_avx512.csv
