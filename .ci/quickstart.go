// SPDX-License-Identifier: MIT

//go:build ignore

// Quickstart checks the code that users read first, as .ci/run calls it
// from the repository root:
//
//	go run .ci/quickstart.go
//
// It takes the Go block under "## Quick start" from README.md, the only
// place its code is written, and pastes it into main.go of a new module
// that points at this repository with a replace, beside .ci/quickstart_test.go
// as main_test.go. It vets the module and runs its tests, which call the
// block's get and retryAfter, and run the program as pasted against local
// servers.
//
// It also checks that what users see fits its box: every line of a code
// block in README.md and .ci/compare/README.md within 89 columns, a tab
// counted as GitHub's 8; and every example a whole program on pkg.go.dev,
// within the columns that examplesFit gives, with a doc of 40 words at
// most, 330 for all, that links nothing. Last, the examples' helpers that
// .ci/compare tests must stand there to the letter: ExampleDo_transaction's
// runTx and the helpers it calls in tx_test.go, which runs them against a
// real PostgreSQL; ExampleDo_budget's throttle and bucket, with their
// sentinels, in overload_test.go; and the helpers of ExampleDo_observe,
// ExampleDo_retryAfter and ExampleDo_attemptTimeout in examples_test.go.
// fetch's retryAfter must also stand in the quick start to the letter.
//
// It exits 1 on the first thing that is not as it should be.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if err := check(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Println("ok: the README's quick start passes its tests, builds as pasted and does what it says;")
	fmt.Println("    the code blocks and examples fit their boxes, and the examples' docs their word counts;")
	fmt.Println("    the examples' helpers are the ones .ci/compare tests")
}

func check() error {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		return err
	}
	block, err := quickStart(string(readme))
	if err != nil {
		return err
	}
	for _, name := range []string{"README.md", ".ci/compare/README.md"} {
		if err := codeFits(name); err != nil {
			return err
		}
	}
	if err := examplesFit("example_test.go"); err != nil {
		return err
	}
	quick, err := declTexts("README.md's quick start", []byte(block))
	if err != nil {
		return err
	}
	examples, err := declTexts("example_test.go", nil)
	if err != nil {
		return err
	}
	if err := sameDecls(quick, examples, "retryAfter"); err != nil {
		return err
	}
	for _, c := range []struct {
		evidence string
		names    []string
	}{
		{".ci/compare/tx_test.go", []string{"txn", "runTx", "errUnknownOutcome", "classify", "conflict"}},
		{".ci/compare/overload_test.go", []string{"errServiceUnavailable", "errNotFound", "errThrottled", "refusal", "throttle", "bucket", "record"}},
		{".ci/compare/examples_test.go", []string{"observe", "fetch", "retryAfter", "errAttemptTimeout", "fetchWithin"}},
	} {
		evidence, err := declTexts(c.evidence, nil)
		if err != nil {
			return err
		}
		if err := sameDecls(examples, evidence, c.names...); err != nil {
			return err
		}
	}
	return test(block)
}

// quickStart returns the first Go block after the heading "## Quick start".
func quickStart(readme string) (string, error) {
	_, after, ok := strings.Cut(readme, "\n## Quick start\n")
	if !ok {
		return "", errors.New(`README.md has no "## Quick start" section`)
	}
	_, after, ok = strings.Cut(after, "\n```go\n")
	if !ok {
		return "", errors.New("the quick start has no ```go block")
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		return "", errors.New("the quick start's ```go block does not end")
	}
	return block + "\n", nil
}

// decls holds the text of each top-level declaration of a Go source, doc
// comment included, by the name of its func or first spec.
type decls struct {
	source string // the file, or the block, the texts come from
	texts  map[string]string
}

// sameDecls checks that each top-level declaration named in names stands in
// a and b with the same text: a func or method by its name, a type or var
// by its first name.
func sameDecls(a, b decls, names ...string) error {
	for _, n := range names {
		switch {
		case a.texts[n] == "":
			return fmt.Errorf("%s declares no %s", a.source, n)
		case a.texts[n] != b.texts[n]:
			return fmt.Errorf("%s differs between %s and %s:\n%s\n%s", n, a.source, b.source, a.texts[n], b.texts[n])
		}
	}
	return nil
}

// declTexts returns the declarations of the Go source src, or of the file
// name if src is nil.
func declTexts(name string, src []byte) (decls, error) {
	if src == nil {
		var err error
		if src, err = os.ReadFile(name); err != nil {
			return decls{}, err
		}
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return decls{}, err
	}
	m := map[string]string{}
	text := func(doc *ast.CommentGroup, n ast.Node) string {
		start := n.Pos()
		if doc != nil {
			start = doc.Pos()
		}
		return string(src[fset.Position(start).Offset:fset.Position(n.End()).Offset])
	}
	for _, d := range file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			m[d.Name.Name] = text(d.Doc, d)
		case *ast.GenDecl:
			switch spec := d.Specs[0].(type) {
			case *ast.TypeSpec:
				m[spec.Name.Name] = text(d.Doc, d)
			case *ast.ValueSpec:
				m[spec.Names[0].Name] = text(d.Doc, d)
			}
		}
	}
	return decls{name, m}, nil
}

// codeFits checks that every line of every code block of the Markdown
// file name, fenced or indented, fits GitHub's box: 89 columns, a tab
// counted as 8.
func codeFits(name string) error {
	text, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	fenced, prevBlank, indented := false, true, false
	for i, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			fenced = !fenced
			continue
		case !fenced && line == "":
			prevBlank = true
			continue
		case !fenced:
			indented = strings.HasPrefix(line, "    ") && (prevBlank || indented)
			prevBlank = false
			if !indented {
				continue
			}
		}
		if w := columns(line, 8); w > 89 {
			return fmt.Errorf("%s:%d: a code line of %d columns, a tab counted as 8, is wider than GitHub's box of 89", name, i+1, w)
		}
	}
	return nil
}

// columns returns the width of line with tabs expanded to stops of tab.
func columns(line string, tab int) int {
	w := 0
	for _, r := range line {
		if r == '\t' {
			w += tab - w%tab
		} else {
			w++
		}
	}
	return w
}

// examplesFit checks that every example of the Go file name is a whole
// program on pkg.go.dev (go/doc makes it a Play program, helpers of the
// file included), and that it fits the width of pkgsite's box, its output
// too: 100 columns, a tab counted as 4. An example is as long as it must be;
// its doc is a sentence or two, as the standard library's are: at most 40
// words, 330 for all the examples, and no link.
func examplesFit(name string) error {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	examples := doc.Examples(file)
	if len(examples) == 0 {
		return fmt.Errorf("%s has no examples", name)
	}
	words := 0
	for _, ex := range examples {
		n := len(strings.Fields(ex.Doc))
		switch words += n; {
		case n > 40:
			return fmt.Errorf("Example%s's doc has %d words, more than 40", ex.Name, n)
		case strings.Contains(ex.Doc, "[") || strings.Contains(ex.Doc, "://"):
			return fmt.Errorf("Example%s's doc links to something: %q", ex.Name, ex.Doc)
		}
		if ex.Play == nil {
			return fmt.Errorf("Example%s is no whole program on pkg.go.dev: it calls code outside %s", ex.Name, name)
		}
		var b bytes.Buffer
		if err := format.Node(&b, fset, ex.Play); err != nil {
			return err
		}
		// pkg.go.dev shows the output in a box of its own, as wide.
		for _, l := range strings.Split(b.String()+ex.Output, "\n") {
			if w := columns(l, 4); w > 100 {
				return fmt.Errorf("Example%s has a line of %d columns on pkg.go.dev, more than 100: %s", ex.Name, w, strings.TrimSpace(l))
			}
		}
	}
	if words > 330 {
		return fmt.Errorf("the examples' docs have %d words in all, more than 330", words)
	}
	return nil
}

// test pastes block into main.go of a new module that requires this
// repository through a replace, with .ci/quickstart_test.go as main_test.go,
// and vets it and runs its tests.
func test(block string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "quickstart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	gomod := "module example.com/quickstart\n\ngo 1.25\n\n" +
		"require github.com/bfc42b4f/retry v0.0.0\n\n" +
		"replace github.com/bfc42b4f/retry => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(block), 0o644); err != nil {
		return err
	}
	tests, err := os.ReadFile(filepath.Join(root, ".ci", "quickstart_test.go"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main_test.go"), tests, 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"vet", "-tags", "quickstart", "."}, {"test", "-tags", "quickstart", "-count=1", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s of the quick start as pasted: %v\n%s", args[0], err, out)
		}
	}
	return nil
}
