// SPDX-License-Identifier: MIT

//go:build ignore

// Modfiles lists the files that the module proxy serves to users of the
// module, as .ci/run calls it from the repository root:
//
//	(cd .ci && go run modfiles.go ..)
//
// It asks golang.org/x/mod/zip, the code the go command uses to make a
// module's zip, which files of the directory the zip holds, and exits 1 if
// any is not in the list below: .ci has a go.mod of its own, which leaves it
// out. Run it on a clean clone, as CI does: the zip would hold an untracked
// file too.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/mod/zip"
)

// library holds the files users download: the library's, and the workflow
// that runs CI where the repository is published.
var library = []string{
	".github/workflows/ci.yml", ".gitignore", "LICENSE", "README.md",
	"example_test.go", "go.mod", "permanent.go", "policy.go", "retry.go",
	"retry_test.go",
}

func main() {
	files, err := zip.CheckDir(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "modfiles:", err)
		os.Exit(1)
	}
	bad := 0
	for _, f := range files.Valid {
		f, _ = filepath.Rel(os.Args[1], f)
		fmt.Println(f)
		if !slices.Contains(library, f) {
			fmt.Fprintln(os.Stderr, "modfiles: the module's zip holds", f, "which is not a file of the library")
			bad++
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}
