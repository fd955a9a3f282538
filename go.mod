module github.com/go-rpcrdma/rpcrdma

go 1.26

require (
	github.com/rasky/go-xdr v0.0.0-20170124162913-1a41d1a06c93
	github.com/stretchr/testify v1.11.1
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
