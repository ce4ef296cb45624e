"""The contract's generated Python: `meshrl.api.<area>.v1.<area>_pb2(_grpc)` for each proto package
`meshrl.<area>.v1` in protos/ (bash scripts/gen_protos.sh). Never edit by hand."""
