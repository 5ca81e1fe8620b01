"""The utility study that ``benchmarks/utility.py`` runs: dpsense's methods against the
peers' on real and synthetic data (its setup, shared with the lab, is
``dpsense.lab.study_setup``)."""
