module github.com/go-rpcrdma/rpcrdma

go 1.26

require (
	github.com/rasky/go-xdr v0.0.0-20170124162913-1a41d1a06c93 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
)
