"""Logs of a training run: CSV rows, TensorBoard scalars and a learning-curve plot (for `rlgraph train`).

Nothing here imports a backend; matplotlib is imported only inside `plot_learning_curve`.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "progress.csv")
>>> with CSVLogger(path) as log:
...     log.log({"step": 10, "episode_return": 1.5})
...     log.log({"step": 20, "episode_return": 2.0, "loss": 0.3})
>>> read_csv(path)
{'step': [10, 20], 'episode_return': [1.5, 2.0], 'loss': [None, 0.3]}
"""
from __future__ import annotations

import csv
import errno
import io
import os
import secrets
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.tensorboard import TensorBoardWriter, crc32c

# The errors of a full disk: no space left, or the user's quota used up.
DISK_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))

__all__ = ["CSVLogger", "read_csv", "plot_learning_curve", "save_figure", "moving_average", "TensorBoardWriter",
           "crc32c", "write_atomically", "write_error"]


class CSVLogger:
    """Appends rows (dicts) to a CSV file, one line per row, written to the file right away.

    The header is written once: at once when `fieldnames` are given, else with the first row. If
    the file already exists and has a header (a resumed run), its columns are kept and rows are
    appended. Columns follow `fieldnames` if given, else the keys of the first row, in order. When
    a later row brings keys that are not columns yet, they are added at the end and the file is
    rewritten once (atomically) with the wider header, earlier rows getting empty cells for them,
    so the file stays a rectangular table. Keys missing from a row are left empty.

    Each row goes to the file in one write; one that fails (a full disk) is cut off again, so the
    file never ends in part of a row.

    Args:
        path: The CSV file; parent directories are created.
        fieldnames: Initial columns (optional).

    Raises:
        OSError: When the file cannot be written (the file is as it was before the call).
    """

    def __init__(self, path: str, fieldnames: Optional[Sequence[str]] = None):
        self.path = os.fspath(path)
        self.fieldnames: List[str] = [str(name) for name in fieldnames or ()]
        if len(set(self.fieldnames)) != len(self.fieldnames):
            raise RLGraphError("duplicate column names", where="CSVLogger(fieldnames)", expected="unique names",
                               received=list(fieldnames))
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        self._header_written = False
        if os.path.exists(self.path) and os.path.getsize(self.path) > 0:
            with open(self.path, newline="", encoding="utf-8") as existing:
                header = next(csv.reader(existing), [])
            self.fieldnames = header + [name for name in self.fieldnames if name not in header]
            self._header_written = True
            if len(self.fieldnames) > len(header):
                self._rewrite()
        self._fd: Optional[int] = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        if self.fieldnames and not self._header_written:
            try:
                self._append([])
            except OSError:
                self.close()
                raise

    def log(self, row: Mapping[str, Any]):
        """Appends one row to the file.

        Args:
            row: Column name -> value (numbers, strings; anything else is written as `str(value)`).

        Raises:
            RLGraphError: If `row` is not a mapping or the logger is closed.
            OSError: If the file cannot be written (it is left as it was).
        """
        if not isinstance(row, Mapping):
            raise RLGraphError("a row must be a mapping from column name to value", where="CSVLogger.log",
                               expected="dict", received=type(row).__name__)
        if self._fd is None:
            raise RLGraphError("the logger is closed", where=f"CSVLogger({self.path!r})")
        row = {str(key): value for key, value in row.items()}
        new = [key for key in row if key not in self.fieldnames]
        if new:
            self.fieldnames.extend(new)
            if self._header_written:
                self._rewrite()  # (Replaces the file: the appends go to the new one.)
                os.close(self._fd)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._append([row])

    # `writerow` reads like the csv module.
    writerow = log

    def _append(self, rows: List[Mapping[str, Any]]):
        """Writes `rows` (after the header, if it is not written yet) in one piece, or nothing."""
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=self.fieldnames, restval="")
        if not self._header_written:
            writer.writeheader()
        writer.writerows(rows)
        size = os.fstat(self._fd).st_size
        try:
            _write_all(self._fd, text.getvalue().encode("utf-8"))
        except OSError:
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise
        self._header_written = True

    def _rewrite(self):
        """Rewrites the file with the current (wider) header; existing rows keep their values."""
        with open(self.path, newline="", encoding="utf-8") as existing:
            rows = list(csv.DictReader(existing))

        def write(out):
            writer = csv.DictWriter(out, fieldnames=self.fieldnames, restval="")
            writer.writeheader()
            writer.writerows({key: value for key, value in row.items() if key is not None} for row in rows)
        write_atomically(self.path, write, newline="")

    def close(self):
        """Closes the file; further calls do nothing."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> "CSVLogger":
        return self

    def __exit__(self, *exc_info):
        self.close()


def _write_all(fd: int, data: bytes) -> None:
    """Writes all of `data` to file descriptor `fd` (a short write goes on; a failed one raises)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomically(path: str, write: Callable[[IO], None], binary: bool = False, **open_args: Any) -> str:
    """Writes file `path` whole or not at all: `write(handle)` fills a temporary file next to it
    (".<name>.tmp-<pid>-<random>"), which is synced and then renamed over `path`. On any error the
    temporary file is removed and `path` is as it was (a full disk never leaves a truncated file in
    place of a good one). Returns `path`.

    Args:
        path: The file to write; its directory must exist.
        write: Called with the open temporary file.
        binary: Open it in binary mode (default: text, UTF-8).
        open_args: More arguments of `open` (e.g. newline="" for the csv module).
    """
    path = os.fspath(path)
    parent, name = os.path.split(path)
    temporary = os.path.join(parent, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    if not binary:
        open_args.setdefault("encoding", "utf-8")
    try:
        # (os.open applies the umask, as open(path, "w") would: the file gets the usual permissions.)
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb" if binary else "w",
                  **open_args) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return path


def write_error(error: OSError, what: str, where: str, hint: Optional[str] = None,
                error_class: type = RLGraphError) -> RLGraphError:
    """The `RLGraphError` (or `error_class`) that reports an `OSError` raised while writing `what`
    (raise it `from error`): a full disk or quota says so, with `hint` after it."""
    reason = error.strerror or str(error)
    if error.errno in DISK_FULL:
        reason = f"the disk is full ({reason})"
    result = error_class(f"cannot write {what}: {reason}", where=where, hint=hint)
    if isinstance(result, OSError):  # (E.g. RLGraphCheckpointWriteError: the OSError's fields too.)
        result.errno, result.strerror, result.filename = error.errno, error.strerror, error.filename
    return result


def _parse_cell(text: str) -> Any:
    if text == "":
        return None
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def read_csv(path: str) -> Dict[str, List[Any]]:
    """Reads a CSV file with a header into columns.

    Cells are parsed as int, else float, else kept as strings; empty cells become None.

    Args:
        path: The CSV file.

    Returns:
        Column name -> list of values, in file order.

    Raises:
        RLGraphError: If the file does not exist.
    """
    if not os.path.isfile(path):
        raise RLGraphError("no such CSV file", where="read_csv(path)", received=repr(os.fspath(path)))
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        header = next(reader, [])
        columns: Dict[str, List[Any]] = {name: [] for name in header}
        for line in reader:
            for index, name in enumerate(header):
                columns[name].append(_parse_cell(line[index]) if index < len(line) else None)
    return columns


def moving_average(values: Sequence[float], window: int) -> np.ndarray:
    """The trailing mean over the last `window` values (fewer at the start).

    Args:
        values: The series.
        window: How many values to average (>= 1).

    Returns:
        An array as long as `values`; entry i is mean(values[max(0, i - window + 1) : i + 1]).
    """
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return values
    sums = np.cumsum(np.concatenate([[0.0], values]))
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(0, ends - window)
    return (sums[ends] - sums[starts]) / (ends - starts)


def plot_learning_curve(steps: Sequence[float], returns: Sequence[float], path: str, title: Optional[str] = None,
                        smoothing_window: int = 10, evaluations: Optional[Mapping[str, Sequence[Any]]] = None) -> str:
    """Plots episode returns against environment steps, with a moving average, into a PNG file.

    Uses matplotlib's Agg canvas directly (no pyplot), so the global matplotlib backend of the
    calling program is left alone and no display is needed.

    Args:
        steps: Environment step at the end of each episode (x axis).
        returns: Return of each episode.
        path: The PNG file to write; parent directories are created.
        title: The plot title (default: "Learning curve").
        smoothing_window: Episodes averaged by the smoothed line.
        evaluations: Greedy evaluations as the columns of evaluations.csv (`read_csv`): "step",
            "mean_return" and optionally "min_return", "max_return" (a band between them). Rows
            without a mean are left out.

    Returns:
        `path`.

    Raises:
        RLGraphError: If matplotlib is not installed, the inputs differ in length or the window is < 1.
    """
    steps = np.asarray(steps, dtype=np.float64).reshape(-1)
    returns = np.asarray(returns, dtype=np.float64).reshape(-1)
    if len(steps) != len(returns):
        raise RLGraphError("steps and returns must have the same length", where="plot_learning_curve",
                           expected=f"{len(steps)} returns (one per step entry)", received=f"{len(returns)}")
    if isinstance(smoothing_window, bool) or not isinstance(smoothing_window, int) or smoothing_window < 1:
        raise RLGraphError("the smoothing window must be a positive int", where="plot_learning_curve",
                           expected="int >= 1", received=repr(smoothing_window))
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise RLGraphError("plotting needs matplotlib, which is not installed", where="plot_learning_curve",
                           hint="install it with `pip install matplotlib`.") from error
    evaluation = _evaluation_columns(evaluations)

    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    axes.plot(steps, returns, color="tab:blue", alpha=0.35, linewidth=1, label="episode return")
    if len(returns):
        window = min(smoothing_window, len(returns))
        axes.plot(steps, moving_average(returns, window), color="tab:blue", linewidth=2,
                  label=f"moving average ({window} episodes)")
    if evaluation is not None:
        eval_steps, means, lows, highs = evaluation
        if lows is not None:
            axes.fill_between(eval_steps, lows, highs, color="tab:orange", alpha=0.2, linewidth=0,
                              label="evaluation min-max")
        axes.plot(eval_steps, means, color="tab:orange", linewidth=2, marker="o", markersize=4,
                  label="greedy evaluation (mean)")
    if len(returns) or evaluation is not None:
        axes.legend(loc="best")
    axes.set_xlabel("environment steps")
    axes.set_ylabel("return")
    axes.set_title(title or "Learning curve")
    axes.grid(True, alpha=0.3)
    return save_figure(figure, path)


def save_figure(figure: Any, path: str) -> str:
    """Lays out a matplotlib `figure` and writes it to `path` as PNG, atomically (parent directories
    are created; see `write_atomically`); returns `path`."""
    figure.tight_layout()
    parent = os.path.dirname(os.fspath(path))
    if parent:
        os.makedirs(parent, exist_ok=True)
    return write_atomically(path, lambda handle: figure.savefig(handle, format="png"), binary=True)


def _evaluation_columns(evaluations: Optional[Mapping[str, Sequence[Any]]]) -> Optional[tuple]:
    """(steps, means, mins or None, maxs or None) as float arrays of the rows with a mean, or None
    without such rows. The band is drawn only when every kept row has both bounds."""
    if not evaluations or not evaluations.get("step"):
        return None
    steps, means = list(evaluations["step"]), list(evaluations.get("mean_return") or [])
    if len(means) != len(steps):
        raise RLGraphError("evaluations need a mean_return per step", where="plot_learning_curve(evaluations)",
                           expected=f"{len(steps)} values", received=len(means))
    rows = [i for i, mean in enumerate(means) if mean is not None and steps[i] is not None]
    if not rows:
        return None
    lows, highs = evaluations.get("min_return"), evaluations.get("max_return")
    band = (lows is not None and highs is not None and len(lows) == len(highs) == len(steps)
            and all(lows[i] is not None and highs[i] is not None for i in rows))

    def pick(column):
        return np.asarray([column[i] for i in rows], dtype=np.float64)
    return pick(steps), pick(means), pick(lows) if band else None, pick(highs) if band else None
