module example.com/demo-ext

go 1.25.0
