#!/usr/bin/env python3
"""Expected chat-template renders, made by transformers' own chat-template code.

For every template in testdata/chat-templates/*.jinja and every conversation in
tests/fixtures/chat/conversations/*.json, renders with add_generation_prompt true and false through
transformers.utils.chat_template_utils (the code apply_chat_template runs, with no tokenizer
needed) and writes

  tests/fixtures/chat/expected/<template>__<conversation>__<gen|nogen>.txt   the exact prompt text
  tests/fixtures/chat/expected/manifest.json   every combination: variables passed, file or error

A combination whose template raises (e.g. Llama 3.2 with two tool calls) gets no .txt; the manifest
records the error, and tests/text_jinja_test.cpp checks that ztvm raises too.

Conversation files are shaped like an OpenAI chat request: {"messages": [...], "tools": [...]
(optional), "chat_template_kwargs": {...} (optional extra template variables, as vLLM and
llama-server accept them)}. Variables passed to every render: see BASE_VARS.

Run from the repository root (no network needed):  python3 tools/make_template_renders.py
On the GPU machine ../shared does not travel: copy the templates into .cache/chat-templates (an
ignored folder, carried with the run) and write to $OUT, then copy the results back:
  python3 tools/make_template_renders.py --templates .cache/chat-templates --out $OUT/expected
--jinja2-fallback renders with plain jinja2 configured like transformers, for development on a
machine without transformers; the manifest then says so, and such renders are not a reference.
"""
import argparse
import copy
import glob
import json
import os
import sys
from datetime import datetime

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONV_DIR = os.path.join(REPO, "tests", "fixtures", "chat", "conversations")
OUT_DIR = os.path.join(REPO, "tests", "fixtures", "chat", "expected")
# Passed to every render (a conversation's chat_template_kwargs override them). date_string keeps Llama 3 templates
# from reading the clock; enable_thinking=False is what ztvm passes by default.
BASE_VARS = {"bos_token": "<s>", "eos_token": "</s>", "date_string": "26 Jul 2024", "enable_thinking": False}


def find_templates_dir(explicit):
    candidates = [explicit] if explicit else [
        os.path.join(REPO, "testdata", "chat-templates"),
    ]
    for c in candidates:
        if c and os.path.isdir(c) and glob.glob(os.path.join(c, "*.jinja")):
            return os.path.abspath(c)
    sys.exit("no chat templates found in: " + ", ".join(str(c) for c in candidates) + " (use --templates DIR)")


def transformers_renderer():
    """render(template, messages, tools, add_generation_prompt, variables) via transformers."""
    import transformers
    from transformers.utils import chat_template_utils as ctu

    if hasattr(ctu, "render_jinja_template"):
        def render(template, messages, tools, add_generation_prompt, variables):
            out = ctu.render_jinja_template(conversations=[messages], tools=tools, chat_template=template,
                                            add_generation_prompt=add_generation_prompt, **variables)
            rendered = out[0] if isinstance(out, tuple) else out
            return rendered[0]
        how = "render_jinja_template"
    else:  # older layouts: the compiled template, called with apply_chat_template's variables
        def render(template, messages, tools, add_generation_prompt, variables):
            compiled = ctu._compile_jinja_template(template)
            return compiled.render(messages=messages, tools=tools, documents=None,
                                   add_generation_prompt=add_generation_prompt, **variables)
        how = "_compile_jinja_template"
    import jinja2
    return render, "transformers %s (%s), jinja2 %s" % (transformers.__version__, how, jinja2.__version__)


def jinja2_renderer():
    """Development only: jinja2 set up as transformers sets it up (not a reference)."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)

    def render(template, messages, tools, add_generation_prompt, variables):
        return env.from_string(template).render(messages=messages, tools=tools, documents=None,
                                                add_generation_prompt=add_generation_prompt, **variables)
    return render, "jinja2 %s with a transformers-like environment (DEVELOPMENT ONLY, not transformers)" % jinja2.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--templates", help="directory of *.jinja chat templates")
    ap.add_argument("--out", default=OUT_DIR, help="output directory (default: %(default)s)")
    ap.add_argument("--jinja2-fallback", action="store_true", help="use plain jinja2 (development only)")
    args = ap.parse_args()

    templates_dir = find_templates_dir(args.templates)
    render, generator = jinja2_renderer() if args.jinja2_fallback else transformers_renderer()
    # The renderer must pass every variable through; otherwise each render would "fail" and the
    # manifest would be a list of bogus errors. Check once, loudly.
    probe = render("{{ messages[0].content }}|{{ add_generation_prompt }}|{{ bos_token }}|{{ tools }}",
                   [{"role": "user", "content": "hi"}], None, True, dict(BASE_VARS))
    if probe != "hi|True|<s>|None":
        sys.exit("renderer self-check failed: got %r, expected 'hi|True|<s>|None'" % probe)
    conv_files = sorted(glob.glob(os.path.join(CONV_DIR, "*.json")))
    if not conv_files:
        sys.exit("no conversations in " + CONV_DIR)
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "*.txt")):  # stale renders must not survive
        os.remove(old)

    entries, n_ok, n_err = [], 0, 0
    for tpath in sorted(glob.glob(os.path.join(templates_dir, "*.jinja"))):
        tname = os.path.splitext(os.path.basename(tpath))[0]
        with open(tpath, encoding="utf-8", newline="") as f:
            template = f.read()
        for cpath in conv_files:
            cname = os.path.splitext(os.path.basename(cpath))[0]
            with open(cpath, encoding="utf-8") as f:
                conv = json.load(f)
            variables = dict(BASE_VARS)
            variables.update(conv.get("chat_template_kwargs", {}))
            for gen in (True, False):
                entry = {"template": os.path.basename(tpath), "conversation": os.path.basename(cpath),
                         "add_generation_prompt": gen, "vars": variables}
                try:
                    text = render(template, copy.deepcopy(conv["messages"]), copy.deepcopy(conv.get("tools")),
                                  gen, copy.deepcopy(variables))
                    fname = "%s__%s__%s.txt" % (tname, cname, "gen" if gen else "nogen")
                    with open(os.path.join(args.out, fname), "w", encoding="utf-8", newline="") as f:
                        f.write(text)
                    entry["expected"] = fname
                    n_ok += 1
                except Exception as e:  # the template raised: record it, ztvm must raise as well
                    entry["error"] = "%s: %s" % (type(e).__name__, e)
                    n_err += 1
                entries.append(entry)

    manifest = {"generator": generator, "python": sys.version.split()[0], "renders": entries}
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(manifest, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%s: %d renders, %d template errors -> %s" % (generator, n_ok, n_err, args.out))
    if n_ok == 0:
        sys.exit("every render failed: the renderer, not the templates, is broken")


if __name__ == "__main__":
    main()
