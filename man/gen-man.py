#!/usr/bin/env python3
"""Builds the section-3 man pages from the public headers.

The headers (include/zklock*.h) are the reference: every function, type
and constant has its contract in the comment above it. A page's source,
man/NAME.3.in, holds only what a man page adds to that: its title, a
one-line summary, which parts of which header it shows, and its EXAMPLES
and SEE ALSO sections. This script writes NAME, LIBRARY, SYNOPSIS,
DESCRIPTION, RETURN VALUE and ERRORS from the header, so a page cannot
say anything the header does not.

  gen-man.py SRCDIR OUTDIR PAGE.in...   writes OUTDIR/PAGE for each
  gen-man.py --check SRCDIR PAGE.in...  only checks (see check())

A page source's directives are roff comments, so the source renders too:

  .\\"@ summary TEXT        the NAME line's text after "\\-"
  .\\"@ header FILE         the header the page shows (include/FILE)
  .\\"@ pkg NAME            pkg-config module for LIBRARY (default zklock)
  .\\"@ top                 the header's opening comment, as prose
  .\\"@ section TITLE       everything under the header's banner TITLE
                           that no page claims by name
  .\\"@ item NAME           one declaration (with those its comment covers)

Every declaration of every header must land on exactly one page, and a
source may hold no section but EXAMPLES and SEE ALSO: --check fails
otherwise (test/test-man.sh runs it).
"""
import os
import re
import sys

ALLOWED_SECTIONS = {"EXAMPLES", "SEE ALSO"}


# ---------------------------------------------------------------- parsing

class Decl:
    """One declaration: a prototype, a typedef, a #define."""

    def __init__(self, kind, name, code):
        self.kind = kind        # func, functype, enum, struct, opaque, define, errmap
        self.name = name
        self.code = code        # its lines, comments inside kept
        self.members = []       # enum: (name, value, comment lines)
        self.trailing = []      # a one-line #define's own comment


class Group:
    """A comment and the declarations it documents (or none: prose)."""

    def __init__(self, section, comment, decls):
        self.section = section
        self.comment = comment  # text lines, comment markers gone
        self.decls = decls
        self.page = None

    def names(self):
        return [d.name for d in self.decls]


def strip_comment(lines):
    """'/* a', ' * b', ' */' -> ['a', 'b'], keeping inner indentation."""
    text = "\n".join(lines)
    text = re.sub(r"^\s*/\*+", "", text, count=1)
    text = re.sub(r"\*+/\s*$", "", text)
    out = []
    for ln in text.split("\n"):
        ln = re.sub(r"^\s*\* ?", "", ln) if re.match(r"^\s*\*(\s|$)", ln) else ln
        out.append(ln.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    # The first line follows "/* " directly; the others carry the
    # comment's own indentation after " * ".
    if out:
        out[0] = out[0].lstrip()
    return out


def read_comment(lines, i):
    """Lines of the comment that starts at lines[i]; index after it."""
    j = i
    while "*/" not in lines[j]:
        j += 1
    return lines[i:j + 1], j + 1


def read_statement(lines, i):
    """Lines of the declaration at lines[i] (to its ';' at brace depth
    0, or a #define with its continuations); index after it."""
    if lines[i].startswith("#define"):
        j = i
        while lines[j].endswith("\\"):
            j += 1
        return lines[i:j + 1], j + 1
    depth = 0
    j = i
    while True:
        code = re.sub(r"/\*.*?\*/", "", lines[j])
        depth += code.count("{") - code.count("}")
        if depth == 0 and code.rstrip().endswith(";"):
            return lines[i:j + 1], j + 1
        j += 1


def parse_enum_members(body):
    """(name, value, comment lines) for each member of an enum body;
    a member's comment stands before it or trails it."""
    members = []
    pending = None
    k = 0
    while k < len(body):
        ln = body[k]
        s = ln.strip()
        if s.startswith("/*"):
            c, k = read_comment(body, k)
            pending = strip_comment(c)
            continue
        m = re.match(r"\s*(ZKL_\w+)\s*=\s*([^,/]+?)\s*,?\s*(/\*.*)?$", ln)
        if m:
            comment = pending or []
            if m.group(3):
                c = [m.group(3)]
                while "*/" not in c[-1]:
                    k += 1
                    c.append(body[k])
                comment = [x.strip() for x in strip_comment(c)]
            members.append((m.group(1), m.group(2), comment))
            pending = None
        k += 1
    return members


def classify(stmt):
    """A Decl for one statement, or None for what pages do not show."""
    code = "\n".join(stmt)
    flat = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    flat = " ".join(flat.split())
    if flat.startswith("#define"):
        name = flat.split()[1].split("(")[0]
        if name == "ZKL_ERRNO_MAP":
            return Decl("errmap", name, stmt)
        if name.startswith("ZKL_") and not name.startswith("ZKL__") \
                and name != "ZKL_EXTERN":
            d = Decl("define", name, stmt)
            m = re.search(r"/\*.*\*/", code, flags=re.S)
            if m:
                d.trailing = [x.strip() for x in strip_comment([m.group(0)])]
            return d
        return None
    if flat.startswith("ZKL_EXTERN"):
        name = re.search(r"(\w+)\s*\(", flat).group(1)
        return Decl("func", name, stmt)
    if flat.startswith("typedef"):
        m = re.search(r"\(\s*\*\s*(\w+)\s*\)", flat)
        if m and "{" not in flat:
            return Decl("functype", m.group(1), stmt)
        name = re.search(r"(\w+)\s*;$", flat).group(1)
        if "ZKL_ERRNO_MAP(" in flat:
            return None     # the error map's page prints it expanded
        if "{" not in flat:
            return Decl("opaque", name, stmt)
        d = Decl("enum" if flat.startswith("typedef enum") else "struct",
                 name, stmt)
        if d.kind == "enum":
            d.members = parse_enum_members(stmt[1:-1])
        return d
    return None     # forward declarations of other libraries' types


# What a header does that no page could show: found while parsing,
# reported by main() (the pages would silently lose it).
LINT = []


def lint_text(name, text):
    """Forms a page cannot show: a lower-case macro (a public name that
    is no ZKL_EXTERN function), a static or inline definition, a //
    comment."""
    code = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  text, flags=re.S)
    for n, ln in enumerate(code.split("\n"), 1):
        where = "include/%s:%d" % (name, n)
        if re.match(r"\s*#\s*define\s+[a-z_]*[a-z]", ln):
            LINT.append("%s: a macro with a lower-case name (pages show "
                        "ZKL_EXTERN functions and ZKL_ macros)" % where)
        if re.search(r"\b(static|inline)\b", ln):
            LINT.append("%s: a static or inline definition (pages show "
                        "ZKL_EXTERN declarations)" % where)
        if "//" in ln:
            LINT.append("%s: a // comment (pages show /* */ comments only)"
                        % where)


def next_code_line(lines, i):
    """The first line from i that is neither blank nor a conditional."""
    while i < len(lines) and (not lines[i].strip() or
                              re.match(r"#\s*(if|ifdef|ifndef|else|elif|endif)\b",
                                       lines[i])):
        i += 1
    return lines[i] if i < len(lines) else ""


def statement_start(ln):
    """Whether a line starts a declaration a page shows: a comment's
    declarations end at the first line that does not (a blank line, an
    #include, #if, extern "C", a closing brace)."""
    return ln.startswith(("ZKL_EXTERN", "typedef", "#define", "struct "))


def parse_header(path):
    """The header's opening comment, its groups in order, and every
    comment it holds (so that a check can find one no page shows)."""
    with open(path, encoding="utf-8") as f:
        text_all = f.read()
    name = os.path.basename(path)
    lint_text(name, text_all)
    lines = text_all.split("\n")
    groups, top, section = [], [], ""
    i = 0
    banner = re.compile(r"^/\* -{20,} \*/$")
    while i < len(lines):
        ln = lines[i]
        if banner.match(ln):
            section = re.sub(r"^/\*\s*|\s*\*/$", "", lines[i + 1]).strip()
            i += 3
            continue
        if ln.startswith("/*"):
            c, i = read_comment(lines, i)
            text = strip_comment(c)
            if not top and not groups and i < len(lines) and \
                    lines[i].startswith("#ifndef"):
                top = text
                continue
            decls = []
            while i < len(lines) and statement_start(lines[i]):
                stmt, i = read_statement(lines, i)
                d = classify(stmt)
                if d:
                    decls.append(d)
            if not decls and next_code_line(lines, i).startswith("ZKL_EXTERN"):
                LINT.append("include/%s:%d: a comment stands apart from the "
                            "declaration after it (a blank or #if line "
                            "between): it would document nothing" % (name, i))
            elif not decls and re.search(r"\bErrors:", " ".join(text)):
                LINT.append("include/%s:%d: a comment with Errors: documents "
                            "no declaration" % (name, i))
            groups.append(Group(section, text, decls))
            continue
        if statement_start(ln):
            stmt, i = read_statement(lines, i)
            d = classify(stmt)
            if d:
                # A declaration right after another group's: it shares
                # that comment (zkl_options_free after zkl_options_new).
                if groups and groups[-1].decls and lines[i - len(stmt) - 1].strip():
                    groups[-1].decls.append(d)
                else:
                    if d.kind == "func":
                        LINT.append("include/%s:%d: %s has no comment (the "
                                    "header is its reference)"
                                    % (name, i, d.name))
                    groups.append(Group(section, [], [d]))
            continue
        i += 1
    comments = []
    for m in re.finditer(r"/\*.*?\*/", text_all, flags=re.S):
        before = text_all[text_all.rfind("\n", 0, m.start()) + 1:m.start()]
        # Banners, and the include guard's name after its #endif.
        if re.match(r"/\* -{20,} \*/$", m.group(0)) or \
                before.lstrip().startswith("#endif"):
            continue
        comments.append(norm(strip_comment([m.group(0)])))
    return top, groups, comments


def norm(lines):
    return " ".join(" ".join(lines).split())


# ---------------------------------------------------------------- roff

def esc(s):
    s = s.replace("\\", "\\e")
    s = re.sub(r"(?<![\w])-(?=\d)", r"\\-", s)
    return s


def line_start(s):
    return "\\&" + s if s[:1] in (".", "'") else s


class Inline:
    """Fonts for the names in a sentence: functions, types, constants
    bold; a function's parameters italic where they read as code."""

    def __init__(self, params=()):
        self.params = set(p for p in params if p)

    def __call__(self, s):
        s = esc(s)
        s = re.sub(r"\b(zkl_\w+|ZKL_\w+)\b", r"\\fB\1\\fR", s)
        # A parameter is set in italics where it cannot be an English
        # word: a name with '_' (timeout_ms), or any name compared
        # ("n == 0", "size > 0"); "path" and "on" stay roman in prose.
        for p in sorted(self.params, key=len, reverse=True):
            if "_" in p:
                s = re.sub(r"(?<![\w\\])%s\b" % re.escape(p),
                           r"\\fI%s\\fR" % p, s)
            else:
                s = re.sub(r"(?<![\w\\.])(%s)(?=\s*(==|!=|<=|>=|<|>)\s)"
                           % re.escape(p), r"\\fI\1\\fR", s)
        return s


def indent_of(s):
    return len(s) - len(s.lstrip(" "))


def prose(lines, inline, out):
    """A comment's text as roff: paragraphs, '- ' and '1. ' lists,
    headings (a short line whose body is indented under it) and code
    (lines indented under a paragraph break)."""
    lines = list(lines)
    base = min((indent_of(x) for x in lines if x.strip()), default=0)
    i, para, in_list = 0, [], None
    def flush():
        for p in para:
            out.append(line_start(inline(p)))
        para.clear()
    while i < len(lines):
        ln = lines[i]
        if not ln.strip():
            flush()
            if in_list is None:
                out.append(".PP")
            i += 1
            continue
        ind = indent_of(ln) - base
        s = ln.strip()
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        prev_blank = i == 0 or not lines[i - 1].strip()
        m = re.match(r"^(- |(\d+)\. )(.*)$", s)
        if m:
            flush()
            tag = "\\(bu" if m.group(1) == "- " else m.group(2) + "."
            lind = indent_of(ln)
            out.append(".IP %s 4" % tag)
            para.append(m.group(3))
            i += 1
            while i < len(lines) and lines[i].strip() and \
                    indent_of(lines[i]) > lind and \
                    not re.match(r"^(- |\d+\. )", lines[i].strip()):
                para.append(lines[i].strip())
                i += 1
            flush()
            in_list = lind
            continue
        if in_list is not None and indent_of(ln) <= in_list:
            out.append(".PP")
            in_list = None
        if prev_blank and ind == 0 and nxt.strip() and \
                indent_of(nxt) - base >= 2 and not s.endswith((".", ":", ",")):
            flush()
            out.append(".SS " + heading_text(s))
            # The body under a heading is the next level's base.
            j = i + 1
            body = []
            while j < len(lines) and (not lines[j].strip() or
                                      indent_of(lines[j]) - base >= 2):
                body.append(lines[j])
                j += 1
            while body and not body[-1].strip():
                body.pop()
            prose(body, inline, out)
            i = j
            continue
        if prev_blank and ind >= 2 and in_list is None:
            flush()
            out.append(".PP")
            out.append(".RS 4")
            out.append(".nf")
            while i < len(lines) and (lines[i].strip() and
                                      indent_of(lines[i]) - base >= 2):
                out.append(line_start(esc(lines[i][base + 2:])))
                i += 1
            out.append(".fi")
            out.append(".RE")
            continue
        para.append(s)
        i += 1
    flush()
    while out and out[-1] == ".PP":
        out.pop()


# ---------------------------------------------------------------- pages

def params_of(decl):
    flat = " ".join(re.sub(r"/\*.*?\*/", " ", "\n".join(decl.code), flags=re.S).split())
    m = re.search(r"\w+\s*\)?\s*\((.*)\)\s*;$", flat)
    if not m:
        return []
    out = []
    for p in m.group(1).split(","):
        w = re.findall(r"\w+", p)
        if w and w[-1] not in ("void",):
            out.append(w[-1])
    return out


def synopsis_lines(d, errcodes):
    """The declaration as C, without comments and ZKL_EXTERN."""
    if d.kind == "errmap":
        out = ["#define ZKL_ERRNO_MAP(XX) ...", "",
               "typedef enum zkl_error {", "    ZKL_OK = 0,"]
        for name, val, _ in errcodes:
            out.append("    ZKL_%s = %s," % (name, val))
        out[-1] = out[-1].rstrip(",")
        out.append("} zkl_error_t;")
        return out
    code = "\n".join(d.code)
    code = re.sub(r"[ \t]*/\*.*?\*/", "", code, flags=re.S)
    lines = [ln.rstrip() for ln in code.split("\n") if ln.strip()]
    if lines and lines[0].startswith("ZKL_EXTERN "):
        lines[0] = lines[0][len("ZKL_EXTERN "):]
        lines = [lines[0]] + [ln[11:] if ln.startswith(" " * 11) else ln.lstrip()
                              for ln in lines[1:]]
    if d.kind == "define":
        lines = [" ".join(" ".join(lines).replace("\\", " ").split())]
    return lines


def errcodes_of(groups):
    for g in groups:
        for d in g.decls:
            if d.kind == "errmap":
                text = " ".join(x.strip().rstrip("\\").strip() for x in d.code[1:])
                out = []
                for m in re.finditer(r'XX\((\w+),\s*(-?\d+),\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)', text):
                    msg = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(3)))
                    out.append((m.group(1), m.group(2), msg))
                return out
    return []


def split_errors(comment):
    """(the comment without its "Errors:" clause, the clause or None).
    The clause ends the comment, by the header's convention."""
    text = "\n".join(comment)
    k = text.rfind("Errors:")
    if k < 0:
        return comment, None
    before = text[:k].rstrip()
    clause = " ".join(text[k + len("Errors:"):].split())
    return (before.split("\n") if before else []), clause


def heading(names):
    return ", ".join("\\fB%s\\fR%s" % (n, "()" if callable_name(n) else "")
                     for n in names)


FUNCS = set()


def callable_name(n):
    return n in FUNCS


def returns_int(d):
    return d.kind == "func" and re.match(r"\s*ZKL_EXTERN\s+int\s", d.code[0])


def render_group(g, errcodes, out, errors, used):
    """A group's DESCRIPTION entry; its "Errors:" clause goes to errors
    as (the functions it is about, the clause), and every comment text
    shown goes to used."""
    funcs = [d for d in g.decls if d.kind == "func"]
    params = set()
    for d in funcs:
        params.update(params_of(d))
    inline = Inline(params)
    used.add(norm(g.comment))
    comment, clause = split_errors(g.comment)
    if clause:
        # A void function beside an int one (zkl_options_free beside
        # zkl_options_new) shares the comment, not the errors.
        about = [d.name for d in g.decls if returns_int(d)] or g.names()
        errors.append((about, clause, params))
    if not g.decls:
        out.append(".PP")
        prose(comment, inline, out)
        return
    if not comment and not any(m[2] for d in g.decls for m in d.members) \
            and not any(d.kind in ("struct", "errmap") or d.trailing
                        for d in g.decls):
        return      # the synopsis says all there is
    out.append(".PP")
    shown = [d.name for d in g.decls]
    if any(d.kind == "errmap" for d in g.decls):
        shown.append("zkl_error_t")
    vals = ""
    if all(d.kind == "define" and not d.trailing for d in g.decls):
        vals = ", ".join(define_value(d) for d in g.decls)
    out.append(heading(shown) + (" (%s)" % esc(vals) if vals else ""))
    out.append(".RS 4")
    if comment:
        out.append(".PP")
        prose(comment, inline, out)
    for d in g.decls:
        if d.kind == "enum":
            for name, val, mc in d.members:
                used.add(norm(mc))
                out.append(".TP")
                out.append("\\fB%s\\fR (%s)" % (name, esc(val)))
                if mc:
                    body = []
                    prose(mc, inline, body)
                    out.extend(".IP" if b == ".PP" else b for b in body)
        elif d.kind == "define" and d.trailing:
            used.add(norm(d.trailing))
            out.append(".TP")
            out.append("\\fB%s\\fR (%s)" % (d.name, esc(define_value(d))))
            out.append(line_start(inline(norm(d.trailing))))
        elif d.kind == "struct":
            for m in re.finditer(r"/\*.*?\*/", "\n".join(d.code), flags=re.S):
                used.add(norm(strip_comment([m.group(0)])))
            out.append(".PP")
            out.append(".nf")
            for ln in d.code:
                out.append(line_start(esc(ln)))
            out.append(".fi")
        elif d.kind == "errmap":
            for name, val, msg in errcodes:
                out.append(".TP")
                out.append("\\fBZKL_%s\\fR (%s)" % (name, esc(val)))
                out.append(line_start(inline(msg.replace('\\"', '"'))))
    out.append(".RE")


def define_value(d):
    return " ".join(synopsis_lines(d, [])[0].split()[2:])


class Page:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)[:-len(".3.in")]   # zkl_lock_new
        self.summary = ""
        self.header = "zklock.h"
        self.pkg = "zklock"
        self.top = False
        self.sections, self.items = [], []
        self.head, self.rest = [], []
        self.groups = []
        with open(path, encoding="utf-8") as f:
            lines = f.read().rstrip("\n").split("\n")
        k = 0
        while k < len(lines) and not lines[k].startswith(".SH"):
            m = re.match(r'^\.\\"@ (\w+)\s*(.*)$', lines[k])
            if m:
                key, val = m.group(1), m.group(2).strip()
                if key == "summary":
                    self.summary = val
                elif key == "header":
                    self.header = val
                elif key == "pkg":
                    self.pkg = val
                elif key == "top":
                    self.top = True
                elif key == "section":
                    self.sections.append(val)
                elif key == "item":
                    self.items.append(val)
                else:
                    raise SystemExit("%s: unknown directive %s" % (path, key))
            else:
                self.head.append(lines[k])
            k += 1
        self.rest = lines[k:]

    def extra_sections(self):
        return [ln[4:].strip('"') for ln in self.rest if ln.startswith(".SH ")
                if ln[4:].strip('"') not in ALLOWED_SECTIONS]


def assign(pages, headers):
    """Gives every group its page: by item first, then by section."""
    problems = []
    for p in pages:
        top, groups, _ = headers[p.header]
        for want in p.items:
            hit = [g for g in groups if want in g.names()]
            if not hit:
                problems.append("%s: item %s is not in %s" % (p.path, want, p.header))
            for g in hit:
                if g.page and g.page is not p:
                    problems.append("%s: %s is also %s's" % (p.path, want, g.page.path))
                g.page = p
    for p in pages:
        top, groups, _ = headers[p.header]
        # A page that shows a header's opening comment also shows what
        # stands under no banner (the adapters' headers have none).
        for want in p.sections + ([""] if p.top else []):
            hit = [g for g in groups if g.section == want]
            if not hit and not want:
                continue
            if not hit:
                problems.append("%s: no section %r in %s" % (p.path, want, p.header))
            for g in hit:
                if g.page is None:
                    g.page = p
    for h, (top, groups, _) in headers.items():
        for g in groups:
            if g.page is None and g.decls:
                problems.append("include/%s: %s (section %r) is on no page"
                                % (h, ", ".join(g.names()), g.section))
            elif g.page is None and not any(p.header == h and p.top for p in pages):
                problems.append("include/%s: a comment of section %r is on no page"
                                % (h, g.section))
        if not any(p.header == h and p.top for p in pages) and top:
            problems.append("include/%s: its opening comment is on no page" % h)
    for p in pages:
        for s in p.extra_sections():
            problems.append("%s: section %s says what the header must say "
                            "(a source holds only %s)"
                            % (p.path, s, " and ".join(sorted(ALLOWED_SECTIONS))))
        if not p.summary:
            problems.append("%s: no summary" % p.path)
    return problems


def heading_text(s):
    """A .SS argument: quotes would end it."""
    return esc(s).replace('"', "\\(dq")


def render_page(p, headers, used):
    top, groups, _ = headers[p.header]
    errcodes = errcodes_of(groups)
    mine = [g for g in groups if g.page is p]
    funcs = [d.name for g in mine for d in g.decls if d.kind == "func"]
    names = ([p.name] if p.name in funcs else []) + [f for f in funcs if f != p.name]
    if not names:
        names = [p.name]
    out = list(p.head)
    out.append('.\\" Generated by man/gen-man.py from include/%s and man/%s.3.in:'
               % (p.header, p.name))
    out.append('.\\" edit those, not this page.')
    out.append(".SH NAME")
    out.append(", ".join(names) + " \\- " + esc(p.summary))
    out.append(".SH LIBRARY")
    out.append("The zklock library:")
    out.append('.B "pkg\\-config \\-\\-cflags \\-\\-libs %s"' % p.pkg.replace("-", "\\-"))
    out.append(".SH SYNOPSIS")
    out.append(".nf")
    out.append(".B #include <%s>" % p.header)
    for g in mine:
        if not g.decls:
            continue
        out.append(".PP")
        for d in g.decls:
            for ln in synopsis_lines(d, errcodes):
                out.append(line_start(esc(ln)))
    out.append(".fi")
    out.append(".SH DESCRIPTION")
    errors = []
    if p.top:
        used.add(norm(top))
        body = []
        prose(top, Inline(), body)
        out.extend(body)
    sections = []
    for g in mine:
        if g.section not in sections:
            sections.append(g.section)
    for s in sections:
        if s and (len(sections) > 1 or p.top):
            out.append(".SS " + heading_text(s))
        for g in mine:
            if g.section == s:
                render_group(g, errcodes, out, errors, used)
    # The functions that answer with an error code are those with an
    # "Errors:" clause; the others say what they return themselves.
    ints = [n for names_, _, _ in errors for n in names_ if n in FUNCS]
    if ints:
        out.append(".SH RETURN VALUE")
        out.append(", ".join("\\fB%s\\fR()" % n for n in ints))
        out.append(("returns" if len(ints) == 1 else "return") +
                   " 0 on success, else a negative error code" +
                   (" (see ERRORS);" if errors else ";"))
        out.append("\\fBzkl_strerror\\fR(3) gives its text.")
        if len(ints) < len(funcs):
            out.append("What the other functions return, their description says.")
    if errors:
        out.append(".SH ERRORS")
        for names_, clause, ps in errors:
            out.append(".TP")
            out.append(heading(names_))
            out.append(line_start(Inline(ps)(clause)))
    out.extend(p.rest)
    text = "\n".join(out) + "\n"
    return re.sub(r"\n\.PP\n(\.(?:PP|SS|SH|TP|IP)[^\n]*)\n", r"\n\1\n", text)


def main(argv):
    check = argv[1:2] == ["--check"]
    if check:
        srcdir, outdir, srcs = argv[2], None, argv[3:]
    else:
        srcdir, outdir, srcs = argv[1], argv[2], argv[3:]
    # Sources are named as the Makefile names them, relative to SRCDIR.
    pages = [Page(s if os.path.exists(s) else os.path.join(srcdir, s))
             for s in srcs]
    headers = {}
    for p in pages:
        if p.header not in headers:
            headers[p.header] = parse_header(os.path.join(srcdir, "include", p.header))
    inc = os.path.join(srcdir, "include")
    for h in sorted(os.listdir(inc)):
        # A header configure makes (zklock_version.h from its .h.in) is
        # not a source: zklock.h's Version section speaks for it.
        if h.endswith(".h") and h not in headers and \
                not os.path.exists(os.path.join(inc, h + ".in")):
            headers[h] = parse_header(os.path.join(srcdir, "include", h))
    for top, groups, _ in headers.values():
        for g in groups:
            for d in g.decls:
                if d.kind == "func":
                    FUNCS.add(d.name)
    problems = LINT + assign(pages, headers)
    texts, used = {}, set()
    if not problems:
        for p in pages:
            texts[p] = render_page(p, headers, used)
        problems = unshown(headers, pages, used)
    if problems:
        for pr in problems:
            print(pr, file=sys.stderr)
        return 1
    if check:
        return 0
    os.makedirs(outdir, exist_ok=True)
    for p in pages:
        dst = os.path.join(outdir, p.name + ".3")
        with open(dst + ".tmp", "w", encoding="utf-8") as f:
            f.write(texts[p])
        os.replace(dst + ".tmp", dst)
    return 0


def unshown(headers, pages, used):
    """Every comment of a header that a page shows must be on a page: a
    comment the parser attached to nothing (or a new kind of
    declaration it cannot read) fails instead of vanishing."""
    out = []
    for h, (top, groups, comments) in headers.items():
        if not any(p.header == h for p in pages):
            continue
        titles = {g.section for g in groups}
        for c in comments:
            if c and c not in used and c not in titles:
                out.append("include/%s: a comment is on no page: /* %s */"
                           % (h, c[:70]))
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
