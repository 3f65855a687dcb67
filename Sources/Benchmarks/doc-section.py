#!/usr/bin/env python3
"""Puts a generated section into a Markdown file: the text on stdin, which starts with
"<!-- NAME: ..." and ends with "<!-- /NAME -->", replaces the section between those markers,
or is appended if the file has none. Usage: doc-section.py NAME FILE < SECTION"""
import re
import sys

name, path = sys.argv[1], sys.argv[2]
section = sys.stdin.read().rstrip("\n")
text = open(path).read()
pattern = re.compile(r"<!-- " + re.escape(name) + r":.*?<!-- /" + re.escape(name) + r" -->", re.S)
text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
