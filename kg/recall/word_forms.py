"""General English word forms the stemmer leaves apart, mapped to one base word before stemming.

Porter stemming strips regular endings only: "bought" stays apart from "buy", "children" from
"child", "mom" from "mother", "colour" from "color". This table (hand-written, general English,
nothing from any benchmark's answers) maps such a word to the word it is a form of, on both
sides of the index (memories and queries), so they share one term:

- irregular verbs: past tense and past participle → the base verb ("drew", "drawn" → "draw");
- irregular plurals → the singular ("children" → "child", "people" → "person");
- informal and clipped forms → the standard word ("mom", "mum" → "mother"; "pic" → "picture");
- British spellings → American ("colour" → "color", "favourite" → "favorite").

Forms that are also common words of another meaning are left out ("found", "saw", "felt",
"left", "rose", "wound", "lives", "leaves", "bit", "shot").

>>> base_form("bought"), base_form("children"), base_form("mum"), base_form("colour")
('buy', 'child', 'mother', 'color')
>>> base_form("saw"), base_form("table")
('saw', 'table')
"""

from __future__ import annotations

__all__ = ["base_form"]

# "base form form …" groups, separated by "|".
_IRREGULAR_VERBS = """
arise arose arisen|awake awoke awoken|be was were been|bear bore borne|beat beaten|become became|
begin began begun|bend bent|bite bitten|bleed bled|blow blew blown|break broke broken|
breed bred|bring brought|build built|burn burnt|buy bought|catch caught|choose chose chosen|
come came|creep crept|deal dealt|dig dug|do did done|draw drew drawn|dream dreamt|
drink drank drunk|drive drove driven|eat ate eaten|fall fell fallen|feed fed|fight fought|
flee fled|fly flew flown|forbid forbade forbidden|forget forgot forgotten|
forgive forgave forgiven|freeze froze frozen|get got gotten|give gave given|go went gone|
grow grew grown|hang hung|have had|hear heard|hide hid hidden|hold held|keep kept|kneel knelt|
know knew known|lead led|leap leapt|learn learnt|lend lent|lose lost|make made|mean meant|
meet met|pay paid|prove proven|ride rode ridden|ring rang rung|rise risen|run ran|say said|
see seen|seek sought|sell sold|send sent|shake shook shaken|shine shone|show shown|
shrink shrank shrunk|sing sang sung|sink sank sunk|sit sat|sleep slept|slide slid|
speak spoke spoken|speed sped|spend spent|spin spun|spring sprang sprung|stand stood|
steal stole stolen|stick stuck|sting stung|stink stank stunk|strike struck|strive strove striven|
swear swore sworn|sweep swept|swim swam swum|swing swung|take took taken|teach taught|
tear tore torn|tell told|think thought|throw threw thrown|understand understood|wake woke woken|
wear wore worn|weave wove woven|weep wept|win won|write wrote written
"""
_IRREGULAR_PLURALS = """
child children|man men|woman women|person people|foot feet|tooth teeth|mouse mice|goose geese|
wife wives|knife knives|wolf wolves|shelf shelves|half halves
"""
_INFORMAL = """
child kid kids|mother mom moms mum mums mommy|father dad dads daddy|grandmother grandma granny|
grandfather grandpa|picture pic pics|favorite fav fave favs|information info|
conversation convo|family fam|husband hubby|brother bro|sister sis|going gonna|want wanna|
got gotta|television tv|birthday bday|thanks thx
"""
_BRITISH = """
favorite favourite favourites|color colour colours coloured colourful|honor honour honours|
neighbor neighbour neighbours|center centre centres|theater theatre theatres|
organize organise organised organising|realize realise realised realising|
apologize apologise apologised|traveling travelling|traveled travelled|traveler traveller|
humor humour|behavior behaviour|flavor flavour|labor labour|gray grey|mold mould
"""


def _table(*texts: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for text in texts:
        for group in " ".join(text.split()).split("|"):
            base, *forms = group.split()
            found.update((form, base) for form in forms)
    # A base that is itself a form (kids → children → child) resolves to the end of the chain.
    return {form: found.get(base, base) for form, base in found.items()}


_BASE = _table(_IRREGULAR_VERBS, _IRREGULAR_PLURALS, _INFORMAL, _BRITISH)


def base_form(word: str) -> str:
    """The base word `word` (lower-case) is a form of, or `word` itself."""
    return _BASE.get(word, word)
