"""``bisent data``: build data sets from Debian's packages (fetched at run time into the cache)."""

from __future__ import annotations

import click

from ..paths import guarded
from .options import FINITE, FiniteFloat, lang_codes


@click.group("data")
def data_group():
    """Fetch and build data sets from Debian's packages.

    \b
    Examples:
      bisent data libreoffice -l en -L de -o data/lo-en-de
      bisent data bucc -l en -L fr -o data/bucc-en-fr
    """


@data_group.command("libreoffice")
@click.option("-l", "--src-lang", "src",
              default="en", show_default=True, callback=lang_codes, help="Source language (en = en-us).")
@click.option("-L", "--tgt-lang", "tgt", default="de", show_default=True, callback=lang_codes, help="Target language.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder (train/dev/test.tsv, documents.jsonl, stats.json).")
@guarded(folders=("out_dir",))
def libreoffice(src: str, tgt: str, out_dir: str):
    """Aligned paragraphs of LibreOffice help, split by document into train/dev/test.

    \b
    Examples:
      bisent data libreoffice -l en -L de -o data/lo-en-de
    """
    from ..datasets.libreoffice import write_dataset

    _echo_stats(write_dataset(src, tgt, out_dir), out_dir, "documents")


@data_group.command("bucc")
@click.option("-l", "--src-lang", "src",
              default="en", show_default=True, callback=lang_codes, help="Source language (en = en-us).")
@click.option("-L", "--tgt-lang", "tgt", default="de", show_default=True, callback=lang_codes, help="Target language.")
@click.option("--split", default="test", show_default=True, type=click.Choice(["train", "dev", "test"]),
              help="Documents to draw from.")
@click.option("--gold-share", default=0.25, show_default=True, type=FiniteFloat(min=0, max=1),
              help="Wanted fraction of each side that has a translation.")
@click.option("--max-gold", type=click.IntRange(min=1), default=None, help="Cap on gold pairs (small demos).")
@click.option("--seed", default=0, show_default=True, type=int, help="Document order and shuffling.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder ({src}.txt, {tgt}.txt, gold.txt, *.plain.txt).")
@guarded(folders=("out_dir",))
def bucc(src: str, tgt: str, split: str, gold_share: float, max_gold: int | None, seed: int, out_dir: str):
    """A BUCC-like mining task (most sentences unpaired) from LibreOffice help.

    \b
    Examples:
      bisent data bucc -l en -L de -o data/bucc-en-de
      bisent data bucc -L fr --split dev --max-gold 500 -o data/bucc-en-fr-dev
    """
    from ..datasets.comparable import make_mining_task, write_bucc
    from ..datasets.libreoffice import load_pairs, normalise_lang

    src, tgt = normalise_lang(src), normalise_lang(tgt)
    task = make_mining_task(load_pairs(src, tgt), split, gold_share=gold_share, seed=seed,
                            max_gold=max_gold, src_lang=src, tgt_lang=tgt)
    write_bucc(task, out_dir, src, tgt)
    s = task.stats
    click.echo(f"{src}-{tgt} {split}: {s['src']} {src} sentences, {s['tgt']} {tgt} sentences, {s['gold']} gold pairs "
               f"({s['gold_share_src']:.0%} / {s['gold_share_tgt']:.0%} of each side)")
    click.echo(f"wrote {out_dir}")


@data_group.command("align")
@click.option("-l", "--src-lang", "src",
              default="en", show_default=True, callback=lang_codes, help="Source language (en = en-us).")
@click.option("-L", "--tgt-lang", "tgt", default="de", show_default=True, callback=lang_codes, help="Target language.")
@click.option("--split", default="test", show_default=True, type=click.Choice(["train", "dev", "test"]),
              help="Pages to draw from.")
@click.option("--drop", default=0.0, show_default=True, type=FiniteFloat(min=0, max=0.9),
              help="Share of paragraphs that lose their translation on one side (deterministic).")
@click.option("--merge", default=0.0, show_default=True, type=FiniteFloat(min=0, max=0.9),
              help="Share of neighbouring paragraph pairs merged into one line on one side (n-1 / 1-n gold).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Cap on pages.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder (NNNN.src, NNNN.tgt, NNNN.gold, pairs.tsv).")
@guarded(folders=("out_dir",))
def align_task(src: str, tgt: str, split: str, drop: float, merge: float, limit: int | None, out_dir: str):
    """A sentence-alignment task with exact gold: help pages re-split into sentences by sentencex.

    \b
    Examples:
      bisent data align -l en -L de -o data/align-en-de
      bisent data align -L fr --drop 0.1 --merge 0.1 --limit 50 -o data/align-noisy
    """
    from ..datasets.align_gold import load_align_task, write_task
    from ..datasets.libreoffice import normalise_lang

    src, tgt = normalise_lang(src), normalise_lang(tgt)
    docs, stats = load_align_task(src, tgt, split, limit=limit, drop=drop, merge=merge)
    write_task(docs, out_dir, src, tgt)
    click.echo(f"{src}-{tgt} {split}: {stats['pages_kept']} pages, {stats['src_sentences']} {src} and "
               f"{stats['tgt_sentences']} {tgt} sentences, {stats['blocks']} gold blocks "
               f"({stats['blocks_1_1']} 1-1, {stats['merged']} merged); left out: {stats['many_many']} many-many "
               f"paragraphs, {stats['out_of_order']} out of order, {stats['pages_short']} short pages")
    click.echo(f"wrote {out_dir}")


@data_group.command("scale")
@click.option("--size", default=1_000_000, show_default=True, type=click.IntRange(min=1),
              help="Sentences a side (fewer when the sources hold fewer).")
@click.option("--gold", type=click.IntRange(min=0), default=None,
              help="Gold translation pairs hidden inside (default: size/200, at least 50).")
@click.option("--sources", default=None,
              help="Comma-separated subset of the sources (default: all; libreoffice is required, the gold pairs "
                   "come from it and from gettext).")
@click.option("--libreoffice-langs", default=None, callback=lang_codes,
              help="Comma-separated LibreOffice help languages paired with English (default: the 31 Debian has, "
                   "bisent.datasets.scale.LIBREOFFICE_LANGS; each fetched and built once).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder (src.txt, tgt.txt, tgt.lang, gold.tsv, stats.json).")
@guarded(folders=("out_dir",))
def scale(size: int, gold: int | None, sources: str | None, libreoffice_langs: str | None, out_dir: str):
    """English against a mix of languages from Debian's documentation, with gold pairs hidden inside.

    \b
    Examples:
      bisent data scale --size 100000 -o data/scale-100k
    """
    from ..datasets.scale import LIBREOFFICE_LANGS, SOURCES, build_scale
    from ..filtering.langid import identify

    def english(sentence: str) -> bool:
        return next(identify([sentence]))[0] == "en"

    def listed(option, default):
        return tuple(x.strip() for x in option.split(",") if x.strip()) if option else default

    chosen, langs = listed(sources, SOURCES), listed(libreoffice_langs, LIBREOFFICE_LANGS)
    s = build_scale(out_dir, is_english=english, size=size, gold=gold, sources=chosen, libreoffice_langs=langs)
    langs = ", ".join(f"{k} {v}" for k, v in list(s["tgt_by_language"].items())[:8])
    click.echo(f"{s['src_sentences']} source (en) and {s['tgt_sentences']} target sentences "
               f"({len(s['tgt_by_language'])} languages: {langs}, ...), {s['gold_pairs']} gold pairs "
               f"({', '.join(f'{k} {v}' for k, v in s['gold_by_source'].items())})")
    click.echo(f"wrote {out_dir}")


from .documents import data_docs  # noqa: E402  GIMP, GNOME, manual pages, LibreOffice as document pairs

data_group.add_command(data_docs)


def _echo_stats(stats: dict, out_dir: str, sources: str = "sources") -> None:
    """Print pairs and ``sources`` (documents, packages, entries) per split and the removal counts."""
    from ..datasets.libreoffice import SPLITS

    pairs = ", ".join(f"{s} {stats['pairs'][s]}" for s in SPLITS)
    units = ", ".join(f"{s} {stats[sources][s]}" for s in SPLITS)
    removed = ", ".join(f"{k} {v}" for k, v in stats["removed"].items())
    click.echo(f"{stats['src']}-{stats['tgt']}: pairs {pairs}; {sources} {units}")
    click.echo(f"removed: {removed}")
    click.echo(f"wrote {out_dir}")


def _pair_set_command(name: str, module: str, tgt_help: str, columns: str, doc: str) -> None:
    """Register ``bisent data NAME -L LANG -o DIR`` for an English -> LANG pair-set builder."""
    examples = (f"\n\n\b\nExamples:\n  bisent data {name} -L de -o data/{name}-en-de\n"
                f"  bisent data {name} -L fr -o data/{name}-en-fr")

    @data_group.command(name, help=doc + examples)
    @click.option("-L", "--tgt-lang", "tgt", default="de", show_default=True, callback=lang_codes, help=tgt_help)
    @click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
                  help=f"Output folder (train/dev/test.tsv: {columns}; stats.json).")
    @guarded(folders=("out_dir",))
    def command(tgt: str, out_dir: str):
        import importlib

        write_dataset = importlib.import_module(f"bisent.datasets.{module}").write_dataset
        _echo_stats(write_dataset("en", tgt, out_dir), out_dir)


_pair_set_command("gettext", "gettext", "Target language (gettext locale, e.g. de, pt-br).", "package, id, en, tgt",
                  "English -> TGT UI messages from the gettext catalogs of Debian packages, split by package.")
_pair_set_command("gnome", "gnome_help", "Target language (ISO 639-1, e.g. de, fr, es).", "page, block, en, tgt",
                  "English -> TGT paragraphs of GNOME help (gnome-user-docs, paired by itstool's block order), "
                  "split by page.")
_pair_set_command("bible", "bible", "Target language (es: the one Debian packages beside English).",
                  "book, verse id, en, tgt",
                  "English -> TGT verses of two Bible translations from Debian's SWORD packages (World English Bible, "
                  "Reina-Valera 1909), paired by verse id, split by book.")
_pair_set_command("dict", "freedict", "Target language (ISO 639-1, e.g. de, fr, es).", "headword, id, en, tgt",
                  "English -> TGT headwords and example phrases of a FreeDict dictionary, split by entry.")


@data_group.command("general")
@click.option("--langs", default=",".join(("de", "fr", "es", "it", "nl", "pt", "pl", "ru", "tr", "ja", "ko", "zh-cn",
                                           "ar")),
              show_default=True, callback=lang_codes, help="Comma-separated languages besides English.")
@click.option("--cap", "caps", multiple=True, metavar="SOURCE[:LANG]=N",
              help="Most pairs (ui, help, dict: every train pair by default; gnome-pairs: GNOME help blocks, "
                   "rdict: dictionaries into English and ui-apps: UI messages of applications no benchmark "
                   "reads, 0 by default), paragraphs (gnome, man) or words (words; 0: "
                   "no word lists) per language; SOURCE:LANG=N for one language (ui-apps:zh-cn=60000); "
                   "repeatable.")
@click.option("--word-lists", type=click.Choice(["strict", "as-listed"]), default="strict", show_default=True,
              help="strict: word-list words equal to a benchmark dev/test text are left out (the benchmarks stay "
                   "unseen); as-listed: kept, as wordfreq lists them (the student a user ships knows them; "
                   "benchmark figures then say so).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder (train.en-XX.tsv: domain:source, id, en, XX; mono.XX.txt; words.XX.txt; stats.json).")
@guarded(folders=("out_dir",))
def general(langs: str, caps: tuple[str, ...], word_lists: str, out_dir: str):
    """A multi-domain, multilingual training collection for students (benchmark dev/test text held out).

    \b
    Examples:
      bisent data general --langs de,fr -o data/general
    """
    from ..datasets.general import CAPS, OPTIONAL, write_general
    from ..errors import BisentError

    chosen = tuple(x.strip() for x in langs.split(",") if x.strip())
    cap = {}
    for c in caps:
        key, _, n = c.partition("=")
        name, _, lang = key.partition(":")
        if name not in CAPS or not n.isdigit() or int(n) < (0 if name in OPTIONAL else 1):
            raise BisentError(f"--cap {c}: expected SOURCE=N or SOURCE:LANG=N with SOURCE one of {', '.join(CAPS)} "
                              f"and N >= 1 ({', '.join(OPTIONAL)}: N >= 0)")
        if lang and lang not in ("en", *chosen):
            raise BisentError(f"--cap {c}: {lang} is not one of the languages (en, {', '.join(chosen)})")
        cap[key] = int(n)
    stats = write_general(out_dir, chosen, cap,
                          word_lists=word_lists)
    for lang, e in stats["languages"].items():
        parts = [f"{k} {v}" for k, v in {**e["bitext"], **e["mono"], "words": e["words"]}.items()]
        click.echo(f"{lang}: {', '.join(parts)}")
    if word_lists == "as-listed":
        click.echo(f"word lists as listed: {stats['kept'].get('held_out_words', 0)} words equal to a "
                   "benchmark dev/test text kept")
    click.echo(f"wrote {out_dir}")


@data_group.command("fortunes")
@click.option("--langs", default="en,de,es,it,pl,ru,pt,zh-cn", show_default=True, callback=lang_codes,
              help="Comma-separated languages (each one fortunes package: fortunes-min for en, fortunes-br for pt).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder (mono.XX.txt: one cookie a line; stats.json).")
@guarded(folders=("out_dir",))
def fortunes(langs: str, out_dir: str):
    """Everyday monolingual text for distillation: the fortune cookies of Debian's fortunes-XX packages.

    Training text only (no benchmark reads it): pass a file to bisent train as --mono OUT/mono.de.txt. Cookies
    sharing eight words in a row with a Bible dev or test verse are left out.

    \b
    Examples:
      bisent data fortunes --langs de,es -o data/fortunes
    """
    from ..datasets.fortunes import write_fortunes

    stats = write_fortunes(out_dir, tuple(x.strip() for x in langs.split(",") if x.strip()))
    for lang, e in stats["languages"].items():
        removed = ", ".join(f"{k} {v}" for k, v in e["removed"].items())
        click.echo(f"{lang} ({e['package']} {e['version']}): {e['cookies']} cookies; removed: {removed}")
    click.echo(f"wrote {out_dir}")


@data_group.command("lexicon")
@click.option("-e", "--encoder", "encoder_name", default="use-m3", show_default=True,
              help="The teacher whose neighbours pair the words (the student's teacher).")
@click.option("--threshold", default=None, type=FINITE,
              help="Lowest ratio margin of a kept pair (default: bisent.training.lexicon.THRESHOLD, 1.03).")
@click.argument("collection", type=click.Path(file_okay=False))
@guarded(reads=("collection",))
def lexicon(encoder_name: str, threshold: float | None, collection: str):
    """A teacher-mined word lexicon: lexicon.en-XX.tsv beside COLLECTION's word lists (bisent data general).

    Each XX word list is mined against the English one with the teacher (mutual best by ratio margin);
    pairs of equal strings, under the threshold or with a benchmark dev/test text are left out and counted
    in lexicon.json. Train on them with --train COLLECTION/lexicon.en-XX.tsv and data.stream_domains:
    {lexicon: SHARE} (a stream of their own).

    \b
    Examples:
      bisent data lexicon data/general
      bisent data lexicon -e me5-small data/general
    """
    from ..encoders import get_encoder
    from ..training.lexicon import THRESHOLD, write_lexicons

    stats = write_lexicons(collection, get_encoder(encoder_name),
                           threshold=THRESHOLD if threshold is None else threshold)
    for lang, e in stats["languages"].items():
        click.echo(f"en-{lang}: {e['words']} words: {e['kept']} pairs kept of {e['mutual']} mutual "
                   f"(same string {e.get('same', 0)}, under the threshold {e.get('below_threshold', 0)}, "
                   f"held out {e.get('held_out', 0)}), {e['unpaired']} with no mutual partner, "
                   f"{e['repeated']} repeated")
    click.echo(f"wrote {collection}/lexicon.en-XX.tsv, lexicon.json")


@data_group.command("vocab")
@click.option("--train", "train_specs", multiple=True, metavar="[SRC-TGT=]TSV",
              help="Bitext to take the words of, both sides (languages from the name, like train.en-de.tsv).")
@click.option("--mono", "mono_specs", multiple=True, metavar="[LANG=]TXT",
              help="Text, one per line, to take the words of (language from the name, like mono.de.txt).")
@click.option("--min-count", default=1, show_default=True, type=click.IntRange(min=1),
              help="Leave out words seen fewer times.")
@click.option("--max-words", default=None, type=click.IntRange(min=1), help="Most words kept per language.")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Output folder (vocab.XX.txt: one word a line, most frequent first; stats.json).")
@guarded(specs=("train_specs", "mono_specs"), folders=("out_dir",))
def vocab(train_specs: tuple[str, ...], mono_specs: tuple[str, ...], min_count: int, max_words: int | None,
          out_dir: str):
    """The words of a corpus per language, to continue a student on them (docs/models/student.md).

    \b
    Examples:
      bisent data vocab --train en-de=train.tsv --mono en=en.txt -o vocab/
    """
    from ..datasets.vocab import write_vocab
    from ..errors import BisentError
    from ..training.data import resolve_bitext, resolve_monotext

    if not train_specs and not mono_specs:
        raise BisentError("bisent data vocab: give at least one --train or --mono file")
    texts: dict[str, list[str]] = {}
    empty: dict[str, int] = {}
    for spec in train_specs:
        b = resolve_bitext(spec)
        texts.setdefault(b.src_lang, []).extend(p[0] for p in b.pairs)
        texts.setdefault(b.tgt_lang, []).extend(p[1] for p in b.pairs)
    for spec in mono_specs:
        m = resolve_monotext(spec)
        texts.setdefault(m.lang, []).extend(m.sentences)
        empty[m.lang] = empty.get(m.lang, 0) + m.empty_lines
    stats = write_vocab(out_dir, texts, min_count=min_count, max_words=max_words, empty_lines=empty)
    for lang, e in stats["languages"].items():
        click.echo(f"{lang}: {e['texts']} texts ({e['empty_lines']} empty lines left out), {e['tokens']} words, "
                   f"{e['types']} types, {e['written']} written" + (" (Han/kana runs cut into words)" if e["segmented"]
                                                                    else ""))
    click.echo(f"wrote {out_dir}")
