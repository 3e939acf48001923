"""The man pages say what the programs' help says: the same options, and
they render without a warning. TAP; argv: PAGE PROGRAM HELP-ARGUMENT, for
each page, in threes."""

import re
import subprocess
import sys

LONG = re.compile(r"(?<![\w-])--[a-z][a-z-]*[a-z]")
SHORT = re.compile(r"(?<![\w-])-[a-zA-Z](?![\w-])")


def options(text):
    return set(LONG.findall(text)) | set(SHORT.findall(text))


def section(page, name):
    """The text of a man page's section, font changes and escapes for '-' undone."""
    m = re.search(r"^\.SH %s\n(.*?)(?=^\.SH |\Z)" % name, page, re.S | re.M)
    return re.sub(r"\\f[BIRP]", "", m.group(1)).replace("\\-", "-") if m else ""


def main():
    args = sys.argv[1:]
    cases = [args[i:i + 3] for i in range(0, len(args), 3)]
    print("1..%d" % (2 * len(cases)))
    n, failed = 0, False
    for page_path, program, help_arg in cases:
        with open(page_path) as f:
            page = f.read()
        name = page_path.rsplit("/", 1)[-1]
        helped = subprocess.run([program, help_arg], capture_output=True, text=True, timeout=30)
        said = options(helped.stdout)
        documented = options(section(page, "OPTIONS"))
        n += 1
        if helped.returncode != 0 or not said:
            print("not ok %d - %s: %s %s printed no options (exit %d)" % (n, name, program, help_arg,
                                                                        helped.returncode))
            failed = True
        elif said != documented:
            print("not ok %d - %s has the options of %s %s" % (n, name, program, help_arg))
            print("# only in the help: %s" % " ".join(sorted(said - documented)))
            print("# only in the page: %s" % " ".join(sorted(documented - said)))
            failed = True
        else:
            print("ok %d - %s has the options of %s %s (%d)" % (n, name, program, help_arg, len(said)))
        n += 1
        rendered = subprocess.run(["groff", "-man", "-ww", "-z", "-rCHECKSTYLE=3", page_path],
                                  capture_output=True, text=True, timeout=30)
        if rendered.returncode != 0 or rendered.stderr.strip():
            print("not ok %d - %s renders without a warning" % (n, name))
            for line in rendered.stderr.splitlines():
                print("# " + line)
            failed = True
        else:
            print("ok %d - %s renders without a warning" % (n, name))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
