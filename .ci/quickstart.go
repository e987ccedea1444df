// SPDX-License-Identifier: MIT

//go:build ignore

// Quickstart checks the code that users read first, as .ci/run calls it
// from the repository root:
//
//	go run .ci/quickstart.go
//
// It takes the Go block under "## Quick start" from README.md and checks
// that each function in it but main stands, to the letter and with its doc
// comment, in retry_test.go, where the tests run it. Then it pastes the
// block into main.go of a new module that points at this repository with a
// replace, vets and builds it, and runs it against a local server: one that
// answers 503 with Retry-After: 1, then 429 with a Retry-After HTTP-date,
// then 200; and one that answers 404.
//
// It also checks that what users see fits its box: every line of a code
// block in README.md and .ci/compare/README.md within 89 columns, a tab
// counted as GitHub's 8; and every example a whole program on pkg.go.dev,
// within the columns that examplesFit gives. Last, the classify
// func of ExampleDo_transaction must stand, to the letter, as the classify
// that .ci/compare/db_test.go runs against a real PostgreSQL, and the
// bucket of ExampleDo_budget, with its method and sentinel, as the one
// that .ci/compare/overload_test.go runs.
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
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	if err := check(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	fmt.Println("ok: the README's quick start matches retry_test.go, builds as pasted and does what it says;")
	fmt.Println("    the code blocks and examples fit their boxes; ExampleDo_transaction's classify and ExampleDo_budget's")
	fmt.Println("    bucket are the ones .ci/compare runs")
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
	if err := sameFuncs(block, "retry_test.go"); err != nil {
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
	if err := sameClassify("example_test.go", ".ci/compare/db_test.go"); err != nil {
		return err
	}
	if err := sameDecls("example_test.go", ".ci/compare/overload_test.go", "errThrottled", "bucket", "record"); err != nil {
		return err
	}
	bin, err := build(block)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(bin))
	if err := runRetries(bin); err != nil {
		return err
	}
	return runNotFound(bin)
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

// sameFuncs checks that every function of block but main stands in the Go
// file name with the same text, doc comment included.
func sameFuncs(block, name string) error {
	want, err := funcs("README.md", []byte(block))
	if err != nil {
		return err
	}
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	have, err := funcs(name, src)
	if err != nil {
		return err
	}
	delete(want, "main")
	if len(want) == 0 {
		return errors.New("the quick start declares no function but main")
	}
	for f, text := range want {
		switch {
		case have[f] == "":
			return fmt.Errorf("%s has no func %s, which the README's quick start has", name, f)
		case have[f] != text:
			return fmt.Errorf("func %s differs between the README's quick start and %s:\nREADME:\n%s\n%s:\n%s", f, name, text, name, have[f])
		}
	}
	return nil
}

// sameDecls checks that each top-level declaration named in names stands in
// the Go files example and evidence with the same text, doc comment
// included: a func or method by its name, a type or var by its first name.
func sameDecls(example, evidence string, names ...string) error {
	a, err := declTexts(example)
	if err != nil {
		return err
	}
	b, err := declTexts(evidence)
	if err != nil {
		return err
	}
	for _, n := range names {
		switch {
		case a[n] == "":
			return fmt.Errorf("%s declares no %s", example, n)
		case a[n] != b[n]:
			return fmt.Errorf("%s differs between %s and %s:\n%s\n%s", n, example, evidence, a[n], b[n])
		}
	}
	return nil
}

// declTexts returns the text of each top-level declaration of the Go file
// name, with its doc comment, by the name of its func or first spec.
func declTexts(name string) (map[string]string, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
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
	return m, nil
}

// funcs returns the text of each top-level function in src, with its doc.
func funcs(name string, src []byte) (map[string]string, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, d := range file.Decls {
		if f, ok := d.(*ast.FuncDecl); ok && f.Recv == nil {
			start := f.Pos()
			if f.Doc != nil {
				start = f.Doc.Pos()
			}
			m[f.Name.Name] = string(src[fset.Position(start).Offset:fset.Position(f.End()).Offset])
		}
	}
	return m, nil
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
// file included), and that it fits the width of pkgsite's box: 100
// columns, a tab counted as 4. An example is as long as it must be.
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
	for _, ex := range examples {
		if ex.Play == nil {
			return fmt.Errorf("Example%s is no whole program on pkg.go.dev: it calls code outside %s", ex.Name, name)
		}
		var b bytes.Buffer
		if err := format.Node(&b, fset, ex.Play); err != nil {
			return err
		}
		for _, l := range strings.Split(b.String(), "\n") {
			if w := columns(l, 4); w > 100 {
				return fmt.Errorf("Example%s has a line of %d columns on pkg.go.dev, more than 100: %s", ex.Name, w, strings.TrimSpace(l))
			}
		}
	}
	return nil
}

// sameClassify checks that the func literal assigned to classify in
// ExampleDo_transaction of example, and the one assigned to classify in
// evidence, have the same text, indentation aside.
func sameClassify(example, evidence string) error {
	a, err := classifyText(example, "ExampleDo_transaction")
	if err != nil {
		return err
	}
	b, err := classifyText(evidence, "")
	if err != nil {
		return err
	}
	if a != b {
		return fmt.Errorf("classify differs between %s and %s:\n%s\n%s", example, evidence, a, b)
	}
	return nil
}

// classifyText returns the text of the func literal assigned to classify
// in the Go file name, inside the function fn or, if fn is "", at the top
// level, with each line's leading tabs taken off.
func classifyText(name, fn string) (string, error) {
	fset := token.NewFileSet()
	src, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return "", err
	}
	var lit *ast.FuncLit
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			return n.Name.Name == fn
		case *ast.GenDecl:
			return fn == ""
		case *ast.ValueSpec:
			if len(n.Names) == 1 && n.Names[0].Name == "classify" && len(n.Values) == 1 {
				lit, _ = n.Values[0].(*ast.FuncLit)
			}
		case *ast.AssignStmt:
			if id, ok := n.Lhs[0].(*ast.Ident); ok && id.Name == "classify" && len(n.Rhs) == 1 {
				lit, _ = n.Rhs[0].(*ast.FuncLit)
			}
		}
		return true
	})
	if lit == nil {
		return "", fmt.Errorf("%s has no func literal assigned to classify", name)
	}
	text := string(src[fset.Position(lit.Pos()).Offset:fset.Position(lit.End()).Offset])
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimLeft(lines[i], "\t")
	}
	return strings.Join(lines, "\n"), nil
}

// build pastes block into main.go of a new module that requires this
// repository through a replace, vets it and builds it, and returns the
// program's path.
func build(block string) (string, error) {
	root, err := os.Getwd()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "quickstart")
	if err != nil {
		return "", err
	}
	gomod := "module example.com/quickstart\n\ngo 1.25\n\n" +
		"require github.com/bfc42b4f/retry v0.0.0\n\n" +
		"replace github.com/bfc42b4f/retry => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(block), 0o644); err != nil {
		return "", err
	}
	for _, args := range [][]string{{"vet", "."}, {"build", "-o", "quickstart", "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s of the quick start as pasted: %v\n%s", args[0], err, out)
		}
	}
	return filepath.Join(dir, "quickstart"), nil
}

// runRetries runs the program against a server that answers 503 with
// Retry-After: 1, then 429 with a Retry-After HTTP-date 2s ahead, then 200,
// and checks that it prints the body after 3 calls, having waited at least
// what both headers asked: 1s, then more than 1s (an HTTP-date counts whole
// seconds).
func runRetries(bin string) error {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "hello")
		}
	}))
	defer srv.Close()
	start := time.Now()
	stdout, stderr, err := run(bin, srv.URL)
	elapsed := time.Since(start)
	if err != nil || stdout != "hello\n" || calls.Load() != 3 || elapsed < 2*time.Second {
		return fmt.Errorf("against 503, 429, 200: the program printed %q and %q, exit %v, after %d calls and %v; want \"hello\\n\", exit 0, after 3 calls and at least 2s",
			stdout, stderr, err, calls.Load(), elapsed)
	}
	return nil
}

// runNotFound runs the program against a server that answers 404, and
// checks that it gives up after one call and says why.
func runNotFound(bin string) error {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	stdout, stderr, err := run(bin, srv.URL)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout != "" || stderr != "HTTP 404\n" || calls.Load() != 1 {
		return fmt.Errorf("against 404: the program printed %q and %q, exit %v, after %d calls; want \"HTTP 404\\n\" on stderr, exit 1, after 1 call",
			stdout, stderr, err, calls.Load())
	}
	return nil
}

// run runs bin with args and returns what it printed.
func run(bin string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
