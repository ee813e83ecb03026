module github.com/patriceckhart/zot

go 1.25.0
