// SPDX-License-Identifier: MIT

//go:build ignore

// Apilist writes the exported API of the packages it is given, as .ci/api
// calls it, a line a name, field and method, as the Go distribution's
// api/go1.*.txt are: each declaration as go/types writes it, rewritten in
// their form. Unlike them, it writes an interface on one line and no method
// promoted from an embedded field; an alias stops it.
package main

import (
	"cmp"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"log"
	"os"
	"regexp"
	"slices"
	"strings"
)

func main() {
	var lines []string
	for _, path := range os.Args[1:] {
		imp := importer.ForCompiler(token.NewFileSet(), "source", nil).(types.ImporterFrom)
		pkg, err := imp.ImportFrom(path, ".", 0)
		if err != nil {
			log.Fatal(err)
		}
		write := func(obj types.Object, t types.Type) string {
			return apiForm(types.ObjectString(obj, func(p *types.Package) string {
				if p == pkg {
					return ""
				}
				return p.Name()
			}), t)
		}
		for _, name := range pkg.Scope().Names() {
			obj := pkg.Scope().Lookup(name)
			add := func(o types.Object, line string) {
				if o.Exported() && obj.Exported() {
					lines = append(lines, "pkg "+path+", "+line)
				}
			}
			line := write(obj, obj.Type())
			switch obj := obj.(type) {
			case *types.Const:
				short, exact := obj.Val().String(), obj.Val().ExactString()
				if short != exact {
					short += "  // " + exact
				}
				add(obj, "const "+name+" = "+short)
			case *types.TypeName:
				t := obj.Type().(*types.Named) // An alias stops the check here.
				if s, ok := t.Underlying().(*types.Struct); ok {
					line = line[:strings.Index(line, " struct{")] + " struct"
					for i := range s.NumFields() {
						f := s.Field(i)
						field := strings.TrimPrefix(write(f, t), "field ")
						if f.Embedded() {
							field = "embedded " + strings.TrimPrefix(field, f.Name()+" ")
						}
						add(f, line+", "+field)
					}
				}
				for i := range t.NumMethods() {
					add(t.Method(i), write(t.Method(i), t.Method(i).Type()))
				}
			}
			add(obj, line)
		}
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
}

// apiForm rewrites s, a declaration of t as go/types writes it, as the api
// files do: type parameters by index, no names of parameters, a method's
// receiver before its name, and any, byte, rune and untyped spelled out.
func apiForm(s string, t types.Type) string {
	var tps *types.TypeParamList
	switch t := t.(type) {
	case *types.Named:
		tps = t.TypeParams()
	case *types.Signature:
		tps = cmp.Or(t.TypeParams(), t.RecvTypeParams())
	}
	for i := range tps.Len() {
		name := regexp.MustCompile(`(^|[^.\w])` + tps.At(i).Obj().Name() + `\b`)
		s = name.ReplaceAllString(s, fmt.Sprintf("${1}$$%d", i))
	}
	// The names of parameters go; the word chan, which reads as one, stays.
	s = strings.ReplaceAll(s, "chan ", "chan\x00")
	s = regexp.MustCompile(`(\(|, )\w+ `).ReplaceAllString(s, "$1")
	s = strings.ReplaceAll(s, "chan\x00", "chan ")
	s = regexp.MustCompile(`^func \(([^)]*)\)\.`).ReplaceAllString(s, "method ($1) ")
	words := map[string]string{"untyped rune": "ideal-char", "untyped ": "ideal-", "any": "interface{}", "byte": "uint8", "rune": "int32"}
	return regexp.MustCompile(`\b(untyped rune|untyped |any|byte|rune)\b`).ReplaceAllStringFunc(s, func(w string) string { return words[w] })
}
