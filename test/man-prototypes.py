#!/usr/bin/env python3
"""Each declaration in a man page's SYNOPSIS, word for word the header's;
every ZKL_ name the page uses (error codes, events, states, kinds,
macros) one the headers define; each function's ERRORS entry the very
codes its header comment's "Errors:" names; and every value the page
gives a ZKL_ name, "ZKL_X (N)", the header's.

    man-prototypes.py MANPAGE HEADER...

A SYNOPSIS prints prototypes with roff (.B/.BI/.BR lines: arguments
alternate fonts and join without spaces); the headers declare them
with ZKL_EXTERN. Both are reduced to one line each, whitespace
collapsed, and compared by the declared name (functions, and callback
typedefs "(*name)"). Prints one line per difference, or per name the
SYNOPSIS declares and no header does, and exits 1 if there was any.
"""
import re
import shlex
import sys


def squash(text):
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\( ", "(", text)
    text = re.sub(r" \)", ")", text)
    return re.sub(r" ,", ",", text)


def name_of(decl):
    m = re.search(r"\(\*(\w+)\)\s*\(", decl) or re.search(r"(\w+)\s*\(", decl)
    return m.group(1) if m else None


def header_decls(paths):
    decls = {}
    for path in paths:
        src = open(path).read()
        src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
        for m in re.finditer(r"ZKL_EXTERN\s+([^;]*;)", src):
            d = squash(m.group(1))
            decls[name_of(d)] = d
        # Callback typedefs and function-pointer members of structs.
        for m in re.finditer(r"(?:typedef\s+)?\w[\w \t*]*\(\s*\*\s*\w+\s*\)"
                             r"\s*\([^;]*\);", src):
            d = squash(m.group(0))
            decls.setdefault(name_of(d), d)
    return decls


def roff_line(line):
    """The text one .B/.BI/.BR/.IR/.RB line prints, fonts dropped."""
    m = re.match(r"^\.(BI|IB|BR|RB|IR|RI|B|I)\s+(.*)$", line)
    if not m:
        return None
    args = shlex.split(m.group(2).replace("\\", "\\\\"), posix=True)
    if m.group(1) in ("B", "I"):
        return " ".join(args)
    return "".join(args)


def synopsis_decls(page):
    lines, on = [], False
    for line in open(page):
        line = line.rstrip("\n")
        if line.startswith(".SH "):
            on = line[4:].strip('"') == "SYNOPSIS"
            continue
        if on:
            lines.append(line)
    text, out = [], []
    for line in lines:
        t = roff_line(line)
        if t is None:
            if not line.startswith("."):
                t = line
            else:
                continue
        t = re.sub(r"\\f[BIRP]", "", t).replace("\\-", "-")
        # Includes, macros and a struct's own lines are not prototypes;
        # the function pointers inside it are.
        if re.match(r"\s*(#|typedef struct|struct \w+ \{|\})", t):
            continue
        text.append(t)
        if t.rstrip().endswith(";"):
            out.append(squash(" ".join(text)))
            text = []
    return [d for d in out if "(" in d]


def header_names(paths):
    """Every ZKL_ name the headers define: macros, enum values, and the
    error table's XX(NAME, ...) rows (each ZKL_E<NAME>)."""
    names = set()
    for path in paths:
        src = open(path).read()
        names.update(re.findall(r"#define\s+(ZKL_\w+)", src))
        names.update(re.findall(r"\b(ZKL_\w+)\s*=", src))
        names.update("ZKL_E" + n for n in re.findall(r"XX\((\w+),", src))
        names.update(re.findall(r"\b(ZKL_[A-Z0-9_]+)\b", src))
    return names


def header_errors(paths):
    """Function -> the ZKL_E codes named after "Errors:" in the comment
    that stands right above its declaration (or its group's)."""
    errs = {}
    for path in paths:
        src = open(path).read()
        for m in re.finditer(r"/\*((?:(?!\*/).)*?)\*/\s*((?:ZKL_EXTERN[^;]*;\s*)+)",
                             src, re.S):
            com, decls = m.group(1), m.group(2)
            i = com.find("Errors:")
            if i < 0:
                continue
            codes = set(re.findall(r"ZKL_E[A-Z]+", com[i:]))
            refs = set(re.findall(r"(zkl_\w+)\(\)", com[i:]))
            for d in re.findall(r"ZKL_EXTERN([^;]*);", decls):
                m = re.search(r"(zkl_\w+)\s*\(", d)
                # A void function of the group has no errors.
                if m and not re.match(r"\s*void\s", d):
                    errs[m.group(1)] = (codes, refs)
    # "Errors: those of zkl_lock_new()": the codes of the one named too.
    out = {}
    for n, (codes, refs) in errs.items():
        out[n] = set(codes)
        for r in refs:
            if r != n and r in errs:
                out[n] |= errs[r][0]
    return out


def header_values(paths):
    vals = {}
    for path in paths:
        src = open(path).read()
        for m in re.finditer(r"#define\s+(ZKL_\w+)\s+\(?(-?\d+)", src):
            vals[m.group(1)] = m.group(2)
        for m in re.finditer(r"\b(ZKL_\w+)\s*=\s*(-?\d+)", src):
            vals[m.group(1)] = m.group(2)
    return vals


def errors_entries(text):
    """(function, codes) per .TP entry of the ERRORS section."""
    if "\n.SH ERRORS" not in text:
        return []
    sec = text.split("\n.SH ERRORS", 1)[1].split("\n.SH ", 1)[0]
    out = []
    for ent in sec.split(".TP\n")[1:]:
        head, _, body = ent.partition("\n")
        codes = set(re.findall(r"ZKL_E[A-Z]+", body))
        for f in re.findall(r"(zkl_\w+) \(\)", head):
            out.append((f, codes))
    return out


def main():
    page, headers = sys.argv[1], sys.argv[2:]
    known = header_decls(headers)
    bad = 0
    defined = header_names(headers)
    text = re.sub(r"\\f[BIRP]|\\&", "", open(page).read())
    text = re.sub(r"(?m)^\.TH .*$", "", text)  # the page's own title
    for n in sorted(set(re.findall(r"\b(ZKL_[A-Z0-9_]*[A-Z0-9])\b", text))):
        if n not in defined:
            print("%s: names %s, which no header defines" % (page, n))
            bad = 1
    errs = header_errors(headers)
    entries = errors_entries(text)
    if "\n.SH ERRORS" in text and not entries:
        # One list for the page's functions: the codes of their
        # "Errors:", together.
        sec = text.split("\n.SH ERRORS", 1)[1].split("\n.SH ", 1)[0]
        codes = set(re.findall(r"ZKL_E[A-Z]+", sec))
        want = set()
        for d in synopsis_decls(page):
            want |= errs.get(name_of(d), set())
        # A list may also name what another function it cites answers
        # ("zkl_lock_acquire(3) on the write side returns ...").
        for f in re.findall(r"(zkl_\w+) \(3\)", sec):
            if f in errs:
                want |= errs[f] & codes
        if want and codes != want:
            print("%s: ERRORS names %s; the header's Errors of the page's "
                  "functions %s" % (page, " ".join(sorted(codes)),
                                    " ".join(sorted(want))))
            bad = 1
    else:
        listed = {f for f, _ in entries}
        for d in synopsis_decls(page):
            f = name_of(d)
            if f in errs and f not in listed:
                print("%s: %s has \"Errors:\" in the header and no ERRORS "
                      "entry here" % (page, f))
                bad = 1
    for f, codes in errors_entries(text):
        if f not in errs:
            print("%s: ERRORS lists %s, whose header comment has no "
                  "\"Errors:\"" % (page, f))
            bad = 1
        elif codes != errs[f]:
            print("%s: %s: ERRORS names %s; the header %s" %
                  (page, f, " ".join(sorted(codes)) or "none",
                   " ".join(sorted(errs[f])) or "none"))
            bad = 1
    vals = header_values(headers)
    for m in re.finditer(r"\b(ZKL_[A-Z0-9_]+)\s*\n?\(([-\d,]+)\)", text):
        n, v = m.group(1), m.group(2).replace(",", "")
        if n in vals and vals[n] != v:
            print("%s: gives %s as %s; the header %s" % (page, n, v, vals[n]))
            bad = 1
    for d in synopsis_decls(page):
        n = name_of(d)
        if n not in known:
            print("%s: declares %s, which no header does: %s" % (page, n, d))
            bad = 1
        elif known[n] != d:
            print("%s: %s\n  page:   %s\n  header: %s" % (page, n, d, known[n]))
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
