"""How a run is asked for: the configuration, durations, scenario files."""
