"""The serving workload (registered as "serving"): workload.py drives load against an
OpenAI-compatible server and point.py makes one round's result; client.py sends and times
requests, wire.py reads the stream, datasets.py builds the prompts. A point's summary and figures
are results/serving_summary.py."""
