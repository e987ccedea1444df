module github.com/bfc42b4f/retry

go 1.22
