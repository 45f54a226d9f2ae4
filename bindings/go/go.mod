module github.com/simlsh/simlsh/bindings/go

go 1.19
