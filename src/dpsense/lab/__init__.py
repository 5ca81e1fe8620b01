"""The lab: the classic experiments of differential privacy on bundled data, as one page."""
