"""The run folder (docs/run-record.md): the one package that names its files and reads and
writes them, each with its one model.

    folder = RunFolder("runs/20250101T000000Z-kimi26-ep4")
    folder.read_run(), folder.read_summary().levels, folder.read_machine()  # models
    folder.write_server_info(info)                                          # atomic, strict
    record_folder(path)           # the record a path names (a `repro run` folder: bench/)
    new_run_dir(name, output)     # a fresh `runs/<UTC timestamp>-<name>/`

bench and accept write their records here, `repro run` its stage state, report and `repro
runs` read them back. A file that is missing, unreadable or not what it should be is one
`RunRecordError` line naming the file, what is wrong and what to do. `read_json`,
`read_model` and `write_model` are the same bounded reads and atomic strict writes for a file
of another folder (a campaign's own files).
"""

from repro.runfolder.folder import RunFolder, record_folder
from repro.runfolder.jsonio import RunRecordError, read_json, read_model, strict_json, write_model
from repro.runfolder.naming import fresh_run_dir, new_run_dir, utc_now

__all__ = [
    "RunFolder",
    "RunRecordError",
    "fresh_run_dir",
    "new_run_dir",
    "read_json",
    "read_model",
    "record_folder",
    "strict_json",
    "utc_now",
    "write_model",
]
