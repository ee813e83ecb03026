module example.com/zot-bench-floor

go 1.25
