module simlsh.invalid/simlsh

go 1.19
