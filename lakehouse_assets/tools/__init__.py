"""Tools around the demo pipeline that are not tests: chaos runs, a dagster dev wrapper, the class-archive training run."""
