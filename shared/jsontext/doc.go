// Package jsontext reads and writes JSON text without reflection. It is what the wasm filter
// uses instead of encoding/json and github.com/tidwall/gjson, whose package initialisation
// alone (through gjson's modifiers) cost the module hundreds of kilobytes; the token service
// uses the same code through the shared packages.
//
// It owns:
//
//   - [Validate], the one-pass validator: exactly the texts gjson.ValidBytes accepts, within
//     a depth limit;
//   - [AppendString], the string encoder: byte for byte what gjson.AppendJSONString writes
//     (HTML characters, U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD);
//   - [Unquote] and [Unescape], the string decoder: what gjson decodes, its handling of
//     broken surrogate pairs included;
//   - [Value], a reader of validated text: a member by name (the first of duplicates), the
//     members and elements in order, and a value as a string or an integer the way gjson's
//     Result converts it.
//
// Each one reproduces the gjson behaviour the gateway relied on, because the filter's wire
// format and its reading of the token service's answers must not change with the library.
// Fuzz targets named *_MatchesGJSON compare them with gjson, which only the tests import.
package jsontext
