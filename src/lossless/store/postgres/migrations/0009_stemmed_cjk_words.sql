-- Full-text search with stemming and CJK words, as on SQLite (migration
-- 0009 there; the semantics are lossless.store.lexical's).
--
-- Words are indexed by their Snowball English stem, so "migrations" finds
-- "migration". The stemmer gets no stop list: a query made only of function
-- words ("what is this") is searched as given, as on SQLite. Chinese,
-- Japanese and Korean characters each become a word of their own: a space
-- goes around each (the ranges of lexical.CJK_RANGES), so "静默" is found as
-- the phrase "静 默" inside any run of characters. A word of four letters or
-- more also matches the stems it begins (lcm.search_prefix), so "parse"
-- finds "parsers".
--
-- The stored search documents are computed again from the rows, which are
-- untouched: the generated columns are dropped and added back (the table is
-- rewritten once) with their indexes.

CREATE TEXT SEARCH DICTIONARY lcm.english_stem_all (TEMPLATE = pg_catalog.snowball, Language = english);
ALTER TEXT SEARCH CONFIGURATION lcm.search
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH unaccent, lcm.english_stem_all;

CREATE OR REPLACE FUNCTION lcm.search_text(content text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.regexp_replace(
        pg_catalog.translate(
            content,
            '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~',
            '                                '),
        '([\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f])',
        ' \1 ',
        'g');

-- A query word that may also match the stems it begins: 'parse' -> 'pars':*.
CREATE FUNCTION lcm.search_prefix(word text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN pg_catalog.to_tsquery('lcm.search'::regconfig, pg_catalog.quote_literal(word) || ':*');

ALTER TABLE lcm.messages DROP COLUMN search_document;
ALTER TABLE lcm.messages ADD COLUMN search_document tsvector
    GENERATED ALWAYS AS (lcm.search_document(content)) STORED;
CREATE INDEX messages_search ON lcm.messages USING gin (search_document);

ALTER TABLE lcm.summaries DROP COLUMN search_document;
ALTER TABLE lcm.summaries ADD COLUMN search_document tsvector
    GENERATED ALWAYS AS (lcm.search_document(content)) STORED;
CREATE INDEX summaries_search ON lcm.summaries USING gin (search_document);

ALTER TABLE lcm.memories DROP COLUMN search_document;
ALTER TABLE lcm.memories ADD COLUMN search_document tsvector GENERATED ALWAYS AS (
    setweight(lcm.search_document(text), 'B') || setweight(lcm.search_document(tags_text), 'A')
) STORED;
CREATE INDEX memories_search ON lcm.memories USING gin (search_document);
