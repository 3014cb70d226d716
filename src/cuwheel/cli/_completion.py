"""``cuwheel completion bash|zsh|fish|powershell``: a shell completion script, generated
from the parser itself (so it names exactly the commands, options and choices this version
takes) and static (completing a word runs no Python). docs/cli.md#shell-completion says
where each shell loads it from."""

from __future__ import annotations

import argparse
from typing import Any

from cuwheel.errors import Exit

__all__ = ["register"]

SHELLS = ("bash", "zsh", "fish", "powershell")


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "completion",
        help="print a shell completion script: bash, zsh, fish or powershell",
        description=(
            "Print a completion script for SHELL on stdout: commands, options, the values "
            "of options with a fixed set (--format, --color ...), check codes for explain, "
            "and file names elsewhere. Load it from the shell's start-up file "
            "(docs/cli.md#shell-completion)."
        ),
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    p.set_defaults(handler=_run)


EXAMPLES = """\
examples:
  cuwheel completion bash > ~/.local/share/bash-completion/completions/cuwheel
  cuwheel completion zsh >> ~/.zshrc            after compinit in it
  cuwheel completion fish > ~/.config/fish/completions/cuwheel.fish
  cuwheel completion powershell >> $PROFILE
"""


class _Command:
    """A command as the scripts complete it (a plain class: no dataclasses import for
    ``cuwheel --help``, which loads this module to list the command)."""

    def __init__(self, name: str, help: str) -> None:
        self.name = name
        self.help = help
        # (flags, help, choices, takes a value)
        self.options: list[tuple[list[str], str, tuple[str, ...] | None, bool]] = []
        self.words: tuple[str, ...] = ()  # what its positional arguments complete to


def _model() -> tuple[list[_Command], list[str]]:
    """Every command with its options, and the global options (before the command)."""
    from cuwheel.checks.codes import CODES
    from cuwheel.cli import SUBCOMMANDS, build_parser

    parser = build_parser()
    commands: list[_Command] = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help or "" for a in action._choices_actions}
        for name, sub in action.choices.items():
            cmd = _Command(name, helps.get(name, ""))
            for a in sub._actions:
                if not a.option_strings:
                    if a.choices:
                        cmd.words = tuple(str(c) for c in a.choices)
                    continue
                choices = tuple(str(c) for c in a.choices) if a.choices else None
                cmd.options.append((list(a.option_strings), a.help or "", choices,
                                    a.nargs != 0))
            commands.append(cmd)
    for cmd in commands:
        if cmd.name == "help":
            cmd.words = tuple(n[1:] for n in SUBCOMMANDS)
        elif cmd.name == "explain":
            cmd.words = tuple(CODES)
    glob = [o for a in parser._actions for o in a.option_strings]
    return commands, glob


def _short(text: str) -> str:
    text = " ".join(text.split()).split(";")[0].split(" (")[0]
    return text[:60]


def _bash(commands: list[_Command], glob: list[str]) -> str:
    names = " ".join(c.name for c in commands)
    cases: list[str] = []
    values: list[str] = []
    for c in commands:
        flags = " ".join(f for opts, _, _, _ in c.options for f in opts)
        cases.append(f"        {c.name}) opts={_sq(flags)}; words={_sq(' '.join(c.words))} ;;")
        for opts, _, choices, takes in c.options:
            if takes:
                pattern = "|".join(f'"{c.name} {f}"' for f in opts)
                if choices:
                    values.append(f"        {pattern}) words={_sq(' '.join(choices))} ;;")
                else:
                    values.append(f"        {pattern}) return 0 ;;  # a file or free text")
    return f"""\
# bash completion for cuwheel (cuwheel completion bash): eval "$(cuwheel completion bash)"
_cuwheel() {{
    local cur prev cmd opts words i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    cmd=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            --color) ((i++)) ;;
            -*) ;;
            *) cmd="${{COMP_WORDS[i]}}"; break ;;
        esac
    done
    COMPREPLY=()
    if [[ -z "$cmd" ]]; then
        if [[ "$prev" == --color ]]; then
            COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
        elif [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W {_sq(' '.join(glob))} -- "$cur"))
        else
            COMPREPLY=($(compgen -W {_sq(names)} -- "$cur"))
        fi
        return 0
    fi
    case "$cmd" in
{chr(10).join(cases)}
        *) return 0 ;;
    esac
    case "$cmd $prev" in
{chr(10).join(values)}
        *)
            if [[ "$cur" == -* ]]; then
                words="$opts"
            fi ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    return 0
}}
complete -o default -o bashdefault -F _cuwheel cuwheel
"""


def _sq(text: str) -> str:
    """A POSIX shell single-quoted word."""
    return "'" + text.replace("'", "'\\''") + "'"


def _zsh(commands: list[_Command], glob: list[str]) -> str:
    # zsh runs the bash function through its bashcompinit layer: one script for both.
    return ("# zsh completion for cuwheel: eval \"$(cuwheel completion zsh)\" after compinit\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + _bash(commands, glob))


def _fq(text: str) -> str:
    """A fish single-quoted word (fish escapes ' and \\ inside the quotes)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(commands: list[_Command], glob: list[str]) -> str:
    names = " ".join(c.name for c in commands)
    lines = ["# fish completion for cuwheel (cuwheel completion fish)",
             "complete -c cuwheel -f"]
    for c in commands:
        lines.append(f"complete -c cuwheel -n 'not __fish_seen_subcommand_from {names}' "
                     f"-a {c.name} -d {_fq(_short(c.help))}")
    lines.append("complete -c cuwheel -n 'not __fish_seen_subcommand_from "
                 f"{names}' -l color -x -a 'auto always never' -d 'colour of text results'")
    for c in commands:
        when = f"-n '__fish_seen_subcommand_from {c.name}'"
        if c.words:
            lines.append(f"complete -c cuwheel {when} -a {_fq(' '.join(c.words))}")
        else:
            lines.append(f"complete -c cuwheel {when} -F")
        for opts, text, choices, takes in c.options:
            spec = " ".join(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}"
                            for o in opts)
            value = f" -x -a {_fq(' '.join(choices))}" if choices else (" -r -F" if takes
                                                                         else "")
            lines.append(f"complete -c cuwheel {when} {spec}{value} -d {_fq(_short(text))}")
    return "\n".join(lines) + "\n"


def _ps_list(words: list[str] | tuple[str, ...]) -> str:
    return "@(" + ", ".join("'" + w.replace("'", "''") + "'" for w in words) + ")"


def _powershell(commands: list[_Command], glob: list[str]) -> str:
    opts = "\n".join(
        f"    '{c.name}' = {_ps_list([f for o, _, _, _ in c.options for f in o])}"
        for c in commands)
    words = "\n".join(f"    '{c.name}' = {_ps_list(c.words)}" for c in commands if c.words)
    choices = "\n".join(
        f"    '{c.name} {f}' = {_ps_list(ch)}"
        for c in commands for o, _, ch, _ in c.options if ch for f in o)
    names = _ps_list([c.name for c in commands])
    return f"""\
# PowerShell completion for cuwheel (cuwheel completion powershell >> $PROFILE)
$cuwheelOptions = @{{
{opts}
}}
$cuwheelWords = @{{
{words}
}}
$cuwheelChoices = @{{
{choices}
    ' --color' = @('auto', 'always', 'never')
}}
Register-ArgumentCompleter -Native -CommandName cuwheel -ScriptBlock {{
    param($wordToComplete, $commandAst, $cursorPosition)
    $elements = @($commandAst.CommandElements | Select-Object -Skip 1 | ForEach-Object {{
        $_.ToString() }})
    if ($wordToComplete -ne '' -and $elements.Count -gt 0) {{
        $elements = @($elements | Select-Object -SkipLast 1) }}
    $cmd = ''
    for ($i = 0; $i -lt $elements.Count; $i++) {{
        if ($elements[$i] -eq '--color') {{ $i++; continue }}
        if (-not $elements[$i].StartsWith('-')) {{ $cmd = $elements[$i]; break }}
    }}
    $prev = if ($elements.Count -gt 0) {{ $elements[-1] }} else {{ '' }}
    $candidates = if ($cuwheelChoices.ContainsKey("$cmd $prev")) {{
        $cuwheelChoices["$cmd $prev"]
    }} elseif ($cmd -eq '') {{
        if ($wordToComplete.StartsWith('-')) {{ {_ps_list(glob)} }} else {{ {names} }}
    }} elseif ($wordToComplete.StartsWith('-')) {{
        $cuwheelOptions[$cmd]
    }} else {{
        $cuwheelWords[$cmd]
    }}
    @($candidates) | Where-Object {{ $_ -like "$wordToComplete*" }} | ForEach-Object {{
        [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
    }}
}}
"""


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of SHELLS)."""
    commands, glob = _model()
    render = {"bash": _bash, "zsh": _zsh, "fish": _fish, "powershell": _powershell}[shell]
    return render(commands, glob)


def _run(args: argparse.Namespace) -> int:
    import sys

    sys.stdout.write(script(args.shell))
    return Exit.OK
