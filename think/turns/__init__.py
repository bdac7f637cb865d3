"""Admission: which turn runs, when, and how it is cancelled."""
