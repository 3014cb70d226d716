"""Reading, by stage: sources (read/sources/: wheels, directories, installed
distributions, files) -> host binary readers (read/binary/: ELF, PE/COFF, ar) -> the
container walk and device-code parsers (read/device/: fatbin, cubin, PTX) -> inventory
facts, with the streaming scan and shared budgets under all of them (read/bytes/) and the
exported programs beside the wheels (read/artifacts/).  The modules here run a call: what
a target names (targets.py), the scheduler, its work items and its worker processes
(schedule.py, items.py, workers.py) and the public entry point,
:func:`cuwheel.read.inspect.inspect`."""
