#!/usr/bin/env python3
"""Dockerfile, docker-compose.yml and deploy/belfry.docker.yaml agree with the belfry binary.

They are never built or run here (no Docker engine), so this test reads them and asks the binary:
- every belfry command line (the Dockerfile's ENTRYPOINT + CMD and HEALTHCHECK, each belfry
  service's entrypoint/command and healthcheck in compose, and the `docker run`/`docker compose
  run` examples in their comments) uses subcommands and flags that the binary's --help lists;
- every BELFRY_* variable they set or use is one the binary reads: a config key's variable from
  the parser's key table (src/app/config_parser.cc, Sections()) or a CLI option's envname
  (src/app/main.cc); a removed key's variable is refused;
- the binary accepts each belfry service's environment and deploy/belfry.docker.yaml: it is run
  as `belfry [-c FILE] shards` with BELFRY_DATABASE_URL pointing at 127.0.0.1:1 (nothing
  listens there), which loads and validates the whole config (unknown keys and bad values exit
  78, EX_CONFIG) and then fails to connect. It must get as far as connecting;
- deploy/belfry.docker.yaml's values equal the BELFRY_* variables compose sets for its `serve`
  services (the file says compose uses the equivalent variables);
- a healthcheck's URL is an admin route (docs/openapi.yaml) on the port the service's admin
  listens on, which the Dockerfile EXPOSEs and compose publishes.

Usage: deploy_consistency_test.py --belfry BIN --source-dir DIR [--dockerfile F] [--compose F] [--config F]
Exit 0 when all hold; otherwise 1, one line per problem.
"""
import argparse
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import yaml

EX_CONFIG = 78
UNREACHABLE_DB = "postgresql://belfry@127.0.0.1:1/belfry?connect_timeout=2"


# ---------------------------------------------------------------- the binary's own view

class Cli:
    """The binary's subcommands and flags, read from `belfry [path...] --help`."""

    def __init__(self, binary):
        self.binary = binary
        self.cache = {}

    def help(self, path):
        key = tuple(path)
        if key not in self.cache:
            run = subprocess.run([self.binary, *path, "--help"], capture_output=True, text=True, timeout=30,
                                 env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
            if run.returncode != 0:
                raise RuntimeError(f"`belfry {' '.join(path)} --help` exited {run.returncode}: {run.stderr.strip()}")
            self.cache[key] = parse_help(run.stdout)
        return self.cache[key]

    def check_args(self, args):
        """Problems with a belfry argument list (argv without the program)."""
        path, problems = [], []
        i = 0
        while i < len(args):
            tok = args[i]
            h = self.help(path)
            if tok.startswith("-") and tok != "-":
                name = tok.split("=", 1)[0]
                if name not in h["options"]:
                    problems.append(f"`belfry {' '.join(path)}` has no option {name!r}")
                elif h["options"][name] and "=" not in tok:
                    i += 1  # its value
            elif tok in h["subcommands"]:
                path.append(tok)
            elif h["positionals"]:
                pass
            else:
                where = f"`belfry {' '.join(path)}`" if path else "belfry"
                problems.append(f"{where} has no subcommand {tok!r} (it has: {', '.join(sorted(h['subcommands']))})")
                break
            i += 1
        if not problems and self.help(path)["subcommands"] and self.help(path)["needs_subcommand"]:
            problems.append(f"`belfry {' '.join(args)}` names no subcommand of `belfry {' '.join(path)}`")
        return problems


def parse_help(text):
    """CLI11 help -> {options: {name: takes_value}, subcommands: set, positionals: bool, needs_subcommand}."""
    out = {"options": {}, "subcommands": set(), "positionals": False,
           "needs_subcommand": bool(re.search(r"^Usage: .*\bSUBCOMMAND\b", text, re.M))}
    section = None
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            section = line[:-1]
            continue
        if not line.startswith("  ") or not line.strip():
            continue
        cols = re.split(r"\s{2,}", line.strip())
        words = cols[0].split()
        if section == "Options":
            names = [re.sub(r"\{.*\}$", "", n) for n in words[0].split(",")]
            takes_value = len(words) > 1 and re.fullmatch(r"[A-Z][A-Z_:]*", words[1]) is not None
            for n in names:
                out["options"][n] = takes_value
        elif section == "Subcommands":
            out["subcommands"].add(words[0])
        elif section == "Positionals":
            out["positionals"] = True
    return out


def known_env_vars(root):
    """(accepted, removed): BELFRY_* variables the binary reads, and those of removed keys."""
    text = (root / "src/app/config_parser.cc").read_text()
    start = text.index("const std::vector<Section>& Sections()")
    body = text[start:text.index("return *sections;", start)]
    accepted, removed = set(), set()
    # Each MakeSection<...>("name", ...) is followed by its keys, up to the next MakeSection.
    parts = re.split(r"MakeSection<\w+>\(\s*\"(\w*)\"", body)
    for section, keys in zip(parts[1::2], parts[2::2]):
        for kind, key in re.findall(r"\b(\w*)Key(?:<\w+>)?\(\s*\"(\w+)\"", keys):
            path = f"{section}.{key}" if section else key
            var = "BELFRY_" + path.replace(".", "_").upper()
            if kind == "StringMap":
                continue  # kafka.properties: YAML only
            (removed if kind == "Removed" else accepted).add(var)
    main = (root / "src/app/main.cc").read_text()
    accepted |= set(re.findall(r"envname\(\"(BELFRY_\w+)\"\)", main))
    if len(accepted) < 20:
        raise RuntimeError(f"read only {len(accepted)} variables from config_parser.cc; the pattern no longer matches")
    return accepted, removed


def config_loads(binary, env, config=None):
    """None if `belfry [-c config] shards` gets past loading its config; else the reason."""
    argv = [binary] + (["-c", str(config)] if config else []) + ["shards"]
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env, "BELFRY_DATABASE_URL": UNREACHABLE_DB}
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=full_env)
    err = run.stderr.strip()
    if run.returncode == EX_CONFIG:
        return f"config rejected (exit 78): {err}"
    if run.returncode == 0 or "127.0.0.1" not in err or "port 1" not in err:
        return f"expected a refused connection to 127.0.0.1:1 after the config loaded; got exit {run.returncode}: {err}"
    return None


# ---------------------------------------------------------------- the files

def dockerfile_instructions(text):
    """[(INSTRUCTION, argument text)], continuation lines joined, comments dropped."""
    out, cur = [], ""
    for line in text.splitlines():
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cur += line
        m = re.match(r"\s*(\w+)\s+(.*)", cur, re.S)
        if m:
            out.append((m.group(1).upper(), m.group(2).strip()))
        cur = ""
    return out


def exec_form(arg):
    """A JSON array (exec form) or a shell-form string -> argv list."""
    arg = arg.strip()
    if arg.startswith("["):
        return json.loads(arg)
    return ["/bin/sh", "-c", arg]


def interpolate(value, problems, where):
    """Compose's ${VAR:-default} / ${VAR} / $$ interpolation, with an empty environment."""
    if not isinstance(value, str):
        return value

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name, default = m.group(1) or m.group(3), m.group(2)
        if default is not None:
            return default
        problems.append(f"{where}: ${{{name}}} has no default, so the file does not run as shipped")
        return ""

    return re.sub(r"\$\$|\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)", sub, value)


def env_map(service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, "") for e in env)
    return {k: ("" if v is None else str(v)) for k, v in env.items()}


def belfry_args(argv, where, problems):
    """The belfry arguments of an argv whose program is belfry, else None."""
    if not argv:
        return None
    prog = pathlib.PurePosixPath(argv[0]).name
    if prog == "belfry":
        return argv[1:]
    if prog in ("sh", "bash") and len(argv) >= 3 and argv[1] == "-c":
        words = shlex.split(argv[2])
        if words and pathlib.PurePosixPath(words[0]).name == "belfry":
            return words[1:]
    return None


def flatten(config, prefix=""):
    """(key, BELFRY_* variable, value as text) for every scalar key of a config map."""
    out = []
    for k, v in (config or {}).items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            out += flatten(v, path + ".")
        elif not isinstance(v, list) and v is not None:
            text = ("true" if v else "false") if isinstance(v, bool) else str(v)
            out.append((path, "BELFRY_" + path.replace(".", "_").upper(), text))
    return out


def http_paths(openapi):
    doc = yaml.safe_load(openapi.read_text())
    return set(doc.get("paths", {}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--belfry", required=True)
    ap.add_argument("--source-dir", required=True, type=pathlib.Path)
    ap.add_argument("--dockerfile", type=pathlib.Path)
    ap.add_argument("--compose", type=pathlib.Path)
    ap.add_argument("--config", type=pathlib.Path)
    args = ap.parse_args()
    root = args.source_dir
    dockerfile = args.dockerfile or root / "Dockerfile"
    compose_file = args.compose or root / "docker-compose.yml"
    config_file = args.config or root / "deploy/belfry.docker.yaml"

    cli = Cli(args.belfry)
    accepted_env, removed_env = known_env_vars(root)
    routes = http_paths(root / "docs/openapi.yaml")
    problems = []
    checked = []

    def check_command(where, bargs):
        checked.append(f"{where}: belfry {' '.join(bargs)}")
        problems.extend(f"{where}: {p}" for p in cli.check_args(bargs))

    def check_env_names(where, names):
        for n in sorted(names):
            if not n.startswith("BELFRY_"):
                continue
            if n in removed_env:
                problems.append(f"{where}: {n} is a removed config key's variable; belfry refuses it")
            elif n not in accepted_env:
                problems.append(f"{where}: belfry reads no variable {n}")

    def check_healthcheck_url(where, text, admin_port):
        for port, path in re.findall(r"https?://[^/\s:\"']+(?::(\d+))?(/[^\s\"'?]*)", text):
            if path not in routes:
                problems.append(f"{where}: {path} is not an admin route (docs/openapi.yaml)")
            if (port or "80") != str(admin_port):
                problems.append(f"{where}: probes port {port or 80}, but the admin API listens on {admin_port}")

    # ---- Dockerfile
    instr = dockerfile_instructions(dockerfile.read_text())
    entrypoint = cmd = None
    exposed = set()
    for name, arg in instr:
        if name == "ENTRYPOINT":
            entrypoint = exec_form(arg)
        elif name == "CMD":
            cmd = exec_form(arg)
        elif name == "EXPOSE":
            exposed |= {p.split("/")[0] for p in arg.split()}
        elif name in ("ENV", "ARG"):
            check_env_names(f"Dockerfile {name}", set(re.findall(r"\b(BELFRY_\w+)", arg)))
        elif name == "HEALTHCHECK" and "CMD" in arg:
            hc = exec_form(arg.split("CMD", 1)[1])
            bargs = belfry_args(hc, "Dockerfile HEALTHCHECK", problems)
            if bargs is not None:
                check_command("Dockerfile HEALTHCHECK", bargs)
            check_env_names("Dockerfile HEALTHCHECK", set(re.findall(r"\b(BELFRY_\w+)", " ".join(hc))))
            check_healthcheck_url("Dockerfile HEALTHCHECK", " ".join(hc), 8080)
    if entrypoint is None or belfry_args(entrypoint, "Dockerfile ENTRYPOINT", problems) is None:
        problems.append(f"Dockerfile: ENTRYPOINT {entrypoint} does not run belfry")
        entrypoint = ["belfry"]
    image_args = belfry_args(entrypoint, "", problems) + (cmd or [])
    check_command("Dockerfile ENTRYPOINT+CMD", image_args)
    if not re.search(r"COPY\s+--from=\S+\s+\S*/belfry\s+/usr/local/bin/belfry", dockerfile.read_text()):
        problems.append("Dockerfile: the binary is not copied to /usr/local/bin/belfry, so ENTRYPOINT belfry is not found")
    for m in re.finditer(r"#\s*docker run\b[^\n]*?belfry:\S+\s+([^\n]*)", dockerfile.read_text()):
        check_command("Dockerfile comment `docker run`", shlex.split(m.group(1)))

    # ---- docker-compose.yml
    compose_text = compose_file.read_text()
    compose = yaml.safe_load(compose_text)
    services = compose.get("services", {})
    belfry_services = {n: s for n, s in services.items()
                       if "build" in s or str(s.get("image", "")).startswith("belfry:")}
    serve_envs = {}
    if not belfry_services:
        problems.append(f"{compose_file.name}: no service runs the belfry image")
    for name, svc in belfry_services.items():
        where = f"compose service {name}"
        env = {k: interpolate(v, problems, f"{where} environment {k}") for k, v in env_map(svc).items()}
        check_env_names(f"{where} environment", set(env))
        ep = svc.get("entrypoint")
        ep = (shlex.split(ep) if isinstance(ep, str) else ep) if ep is not None else entrypoint
        command = svc.get("command")
        command = (shlex.split(command) if isinstance(command, str) else command) if command is not None else cmd or []
        bargs = belfry_args(list(ep) + list(command), where, problems)
        if bargs is None:
            problems.append(f"{where}: entrypoint {ep} + command {command} does not run belfry")
        else:
            check_command(where, bargs)
        listen = env.get("BELFRY_ADMIN_LISTEN", "127.0.0.1:8080")
        admin_port = listen.rsplit(":", 1)[-1]
        hc = (svc.get("healthcheck") or {}).get("test")
        if hc:
            hc_list = hc if isinstance(hc, list) else ["CMD-SHELL", hc]
            hc_text = " ".join(str(x) for x in hc_list[1:])
            used = set(re.findall(r"\$\$\{?(BELFRY_\w+)", hc_text)) | set(re.findall(r"(?<!\$)\$\{?(BELFRY_\w+)", hc_text))
            check_env_names(f"{where} healthcheck", used)
            for v in sorted(used - set(env)):
                problems.append(f"{where} healthcheck: uses ${v}, which the service does not set")
            hc_argv = hc_list[1:] if hc_list[0] == "CMD" else ["/bin/sh", "-c", hc_text]
            hb = belfry_args(hc_argv, where, problems)
            if hb is not None:
                check_command(f"{where} healthcheck", hb)
            check_healthcheck_url(f"{where} healthcheck", hc_text, admin_port)
        for p in svc.get("ports", []):
            target = str(p.get("target")) if isinstance(p, dict) else str(p).split(":")[-1].split("/")[0]
            if target != admin_port:
                problems.append(f"{where}: publishes container port {target}, but the admin API listens on {admin_port}")
        if bargs and bargs[-1:] == ["serve"] and admin_port not in exposed:
            problems.append(f"{where}: the admin port {admin_port} is not EXPOSEd by the Dockerfile ({sorted(exposed)})")
        if bargs and bargs[-1:] == ["serve"]:
            serve_envs[name] = env
        reason = config_loads(args.belfry, env)
        checked.append(f"{where}: environment loads")
        if reason:
            problems.append(f"{where}: environment: {reason}")
    for m in re.finditer(r"#.*docker compose run(?:\s+--?\S+)*\s+(\S+)\s+([^\n`]*)", compose_text):
        words = [w for w in shlex.split(m.group(2)) if w != "..."]
        if m.group(1) in belfry_services and words:
            check_command(f"{compose_file.name} comment `docker compose run {m.group(1)}`", words)

    # ---- deploy/belfry.docker.yaml
    config = yaml.safe_load(config_file.read_text())
    if not isinstance(config, dict) or not config:
        problems.append(f"{config_file}: not a YAML map of config keys")
    reason = config_loads(args.belfry, {}, config_file)
    checked.append(f"{config_file.name}: loads")
    if reason:
        problems.append(f"{config_file.name}: {reason}")
    # The file says compose sets the same values through BELFRY_* variables: hold it to that.
    for key, var, value in flatten(config):
        for name, env in serve_envs.items():
            if var in env and env[var] != value:
                problems.append(f"{config_file.name}: {key} is {value!r}, "
                                f"but compose service {name} sets {var}={env[var]!r}")

    for c in checked:
        print("checked", c)
    for p in problems:
        print("FAIL:", p)
    print(f"{len(checked)} checks, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
