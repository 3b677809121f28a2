package jsonschema

import (
	"encoding/json"
	"testing"
)

func TestValidate(t *testing.T) {
	s, err := Parse(json.RawMessage(`{
		"type": "object",
		"properties": {
			"score": {"type": "integer", "minimum": 0, "maximum": 10},
			"tone": {"enum": ["plain", "formal"]},
			"tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 2, "uniqueItems": true},
			"ratio": {"type": "number", "exclusiveMaximum": 1, "multipleOf": 0.25},
			"note": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]},
			"sub": {"$ref": "#/$defs/sub"}
		},
		"required": ["score"],
		"additionalProperties": false,
		"$defs": {"sub": {"type": "object", "additionalProperties": {"type": "boolean"}}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]string{
		`{"score": 3, "tone": "plain", "tags": ["a", "b"], "ratio": 0.5, "note": null, "sub": {"x": true}}`: "",
		`[]`:                                  "the answer: expected object, got array",
		`{}`:                                  `the answer: missing required field "score"`,
		`{"score": 2.5}`:                      "/score: expected integer, got number",
		`{"score": 11}`:                       "/score: must be <= 10, got 11",
		`{"score": 1, "tone": "loud"}`:        `/tone: "loud" is not one of ["plain","formal"]`,
		`{"score": 1, "tags": ["A"]}`:         `/tags/0: "A" does not match the pattern ^[a-z]+$`,
		`{"score": 1, "tags": ["a","a"]}`:     "/tags: items 0 and 1 are equal (they must be unique)",
		`{"score": 1, "tags": ["a","b","c"]}`: "/tags: allows at most 2 items, got 3",
		`{"score": 1, "ratio": 1}`:            "/ratio: must be < 1, got 1",
		`{"score": 1, "ratio": 0.3}`:          "/ratio: must be a multiple of 0.25, got 0.3",
		`{"score": 1, "note": "x"}`:           "/note: matches none of the allowed forms (/note: needs at least 2 characters, got 1; /note: expected null, got string)",
		`{"score": 1, "sub": {"x": 1}}`:       "/sub/x: expected boolean, got integer",
		`{"score": 1, "extra": 1}`:            `the answer: unknown field "extra"`,
	} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		got := ""
		if err := s.Validate(v); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", doc, got, want)
		}
	}
	if _, err := Parse(json.RawMessage(`[`)); err == nil {
		t.Error("Parse of bad JSON succeeded")
	}
}
