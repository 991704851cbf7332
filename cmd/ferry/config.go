package main

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferrymq/ferry/conf"
)

// flagJSON is --json, registered for `ferry config` only.
const flagJSON = "json"

// configSections returns the key prefixes that a server mode reads: namesrv, broker and
// controller read their own section and log, standalone (and no mode) everything. ok is false for
// an unknown mode.
func configSections(mode string) (prefixes []string, ok bool) {
	switch mode {
	case "namesrv":
		return []string{"namesrv.", "log."}, true
	case "broker":
		return []string{"broker.", "log.", "console."}, true
	case "controller":
		return []string{"controller.", "log."}, true
	case "", "standalone":
		return []string{""}, true
	}
	return nil, false
}

// selectSettings keeps the settings whose key starts with one of prefixes.
func selectSettings(all []conf.Setting, prefixes []string) []conf.Setting {
	var out []conf.Setting
	for _, s := range all {
		for _, p := range prefixes {
			if strings.HasPrefix(s.Key, p) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// valueWidth caps the width of the value and default columns: a longer value (the delay
// levels, a long list of name servers) overflows into the next column on its own row
// rather than widening the column for every row.
const valueWidth = 24

// printSettings writes settings as an aligned table — key, effective value, its source,
// default and meaning — or, with asJSON, as a JSON array of conf.Setting.
func printSettings(w io.Writer, settings []conf.Setting, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(settings)
	}
	rows := [][]string{{"KEY", "VALUE", "SOURCE", "DEFAULT", "MEANING"}}
	for _, s := range settings {
		rows = append(rows, []string{s.Key, showValue(s.Value), s.Source.String(), showValue(s.Default), s.Meaning})
	}
	return writeTable(w, rows, []int{0, valueWidth, 0, valueWidth})
}

// writeTable writes rows in columns two spaces apart. Column i is as wide as its widest
// cell, but no wider than caps[i] when that is positive: a cell over the cap pushes the
// rest of its own row to the right. The last column is not padded. (text/tabwriter would
// widen the whole column for one long cell.)
func writeTable(w io.Writer, rows [][]string, caps []int) error {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			n := utf8.RuneCountInString(cell)
			if i < len(caps) && caps[i] > 0 && n > caps[i] {
				continue
			}
			widths[i] = max(widths[i], n)
		}
	}
	var b strings.Builder
	for _, row := range rows {
		pos, want := 0, 0 // characters written, and where this cell should start
		for i, cell := range row {
			if i > 0 {
				pad := max(want-pos, 0) + 2
				b.WriteString(strings.Repeat(" ", pad))
				pos += pad
			}
			b.WriteString(cell)
			pos += utf8.RuneCountInString(cell)
			want += widths[i]
			if i > 0 {
				want += 2
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// showValue quotes a value that would otherwise be invisible or split a column: an
// empty one, or one with spaces.
func showValue(v string) string {
	if v == "" || strings.IndexFunc(v, unicode.IsSpace) >= 0 {
		return strconv.Quote(v)
	}
	return v
}
