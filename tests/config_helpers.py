"""Shipped configs cut down for fast CLI and training tests."""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny_config_file(tmp_path, config_name, file_name="tiny.json", **training):
    """configs/`config_name` with `training` merged into its training_spec, written to
    tmp_path/`file_name`; returns that path."""
    with open(os.path.join(ROOT, "configs", config_name)) as handle:
        config = json.load(handle)
    config["training_spec"].update(training)
    path = tmp_path / file_name
    path.write_text(json.dumps(config))
    return path
