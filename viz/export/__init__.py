"""A recorded trace in the formats of the HPC trace viewers: Chrome/Perfetto trace-event JSON (chrome.py) and
OTF2 for Vampir (otf2.py). Both name the threads as the dashboards do (viz.rundata.lane_label)."""
