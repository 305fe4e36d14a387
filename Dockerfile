# Switchyard's Go services (xds, extproc) and the provider simulators.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The vtprotobuf tag turns on the marshallers ext_proc's gRPC codec uses,
# as the Makefile's GOFLAGS do for every local build.
RUN CGO_ENABLED=0 go build -trimpath -tags=vtprotobuf -o /out/ ./xds ./extproc ./cmd/providersim

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/ /usr/local/bin/
COPY configs/ /etc/switchyard/configs/
USER 65532:65532
