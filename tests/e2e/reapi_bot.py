"""A minimal local worker for BuildGrid's Bots API, for the remote-execution e2e test.

BuildGrid's own workers (buildbox-worker, buildbox-run-hosttools) are C++ and
not on PyPI; this one runs each leased Action on the host with the protos
BuildGrid ships: fetch the input root from the CAS, run the Command in a
fresh directory, upload outputs, stdout and stderr, and complete the lease
with the ActionResult. No sandbox: it is a test fixture on 127.0.0.1.

    python reapi_bot.py 127.0.0.1:PORT WORKDIR
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.bytestream import bytestream_pb2, bytestream_pb2_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import (
    bots_pb2,
    bots_pb2_grpc,
    worker_pb2,
)

CHUNK = 1 << 20
# BuildGrid turns an RPC away while Bazel's own fill its concurrency limit
# ("Concurrent RPC limit exceeded!"): wait and ask again rather than die.
RETRIED = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
ATTEMPTS = 60


def retried(call, *args):  # type: ignore[no-untyped-def]
    for attempt in range(ATTEMPTS):
        try:
            return call(*args)
        except grpc.RpcError as error:
            if error.code() not in RETRIED or attempt == ATTEMPTS - 1:
                raise
            time.sleep(min(0.05 * 2**attempt, 2.0))
    raise AssertionError("unreachable")


class Cas:
    def __init__(self, channel: grpc.Channel) -> None:
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.bytestream = bytestream_pb2_grpc.ByteStreamStub(channel)

    def read(self, digest: re.Digest) -> bytes:
        if digest.size_bytes == 0:
            return b""
        name = f"blobs/{digest.hash}/{digest.size_bytes}"
        return retried(self._read, bytestream_pb2.ReadRequest(resource_name=name))

    def _read(self, request: bytestream_pb2.ReadRequest) -> bytes:
        return b"".join(part.data for part in self.bytestream.Read(request))

    def write(self, data: bytes) -> re.Digest:
        digest = re.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
        if not data:
            return digest
        name = f"uploads/{uuid.uuid4()}/blobs/{digest.hash}/{digest.size_bytes}"

        def chunks():  # type: ignore[no-untyped-def]
            offset = 0
            while True:
                piece = data[offset : offset + CHUNK]
                last = offset + len(piece) >= len(data)
                yield bytestream_pb2.WriteRequest(
                    resource_name=name, write_offset=offset, data=piece, finish_write=last
                )
                offset += len(piece)
                if last:
                    return

        retried(lambda: self.bytestream.Write(chunks()))  # a fresh stream each attempt
        return digest

    def message(self, digest: re.Digest, kind: type) -> object:
        found = kind()
        found.ParseFromString(self.read(digest))
        return found

    def materialize(self, digest: re.Digest, where: Path) -> None:
        directory = self.message(digest, re.Directory)
        where.mkdir(parents=True, exist_ok=True)
        for file in directory.files:
            path = where / file.name
            path.write_bytes(self.read(file.digest))
            path.chmod(0o755 if file.is_executable else 0o644)
        for link in directory.symlinks:
            (where / link.name).symlink_to(link.target)
        for child in directory.directories:
            self.materialize(child.digest, where / child.name)


def _directory(cas: Cas, where: Path, tree: re.Tree | None) -> re.Directory:
    directory = re.Directory()
    for entry in sorted(where.iterdir(), key=lambda p: p.name):
        if entry.is_dir() and not entry.is_symlink():
            child = _directory(cas, entry, tree)
            if tree is not None:
                tree.children.append(child)
            digest = cas.write(child.SerializeToString())
            directory.directories.add(name=entry.name, digest=digest)
        elif entry.is_file():
            digest = cas.write(entry.read_bytes())
            executable = os.access(entry, os.X_OK)
            directory.files.add(name=entry.name, digest=digest, is_executable=executable)
    return directory


def execute(cas: Cas, action: re.Action, workdir: Path) -> re.ActionResult:
    command = cas.message(action.command_digest, re.Command)
    root = workdir / uuid.uuid4().hex
    cas.materialize(action.input_root_digest, root)
    cwd = root / command.working_directory
    for output in [*command.output_files, *command.output_directories]:
        (cwd / output).parent.mkdir(parents=True, exist_ok=True)
    env = {var.name: var.value for var in command.environment_variables}
    done = subprocess.run(list(command.arguments), cwd=cwd, env=env, capture_output=True)
    result = re.ActionResult(exit_code=done.returncode)
    result.stdout_digest.CopyFrom(cas.write(done.stdout))
    result.stderr_digest.CopyFrom(cas.write(done.stderr))
    for output in command.output_files:
        path = cwd / output
        if path.is_file():
            executable = os.access(path, os.X_OK)
            result.output_files.add(
                path=output, digest=cas.write(path.read_bytes()), is_executable=executable
            )
    for output in command.output_directories:
        path = cwd / output
        if path.is_dir():
            tree = re.Tree()
            tree.root.CopyFrom(_directory(cas, path, tree))
            result.output_directories.add(
                path=output, tree_digest=cas.write(tree.SerializeToString())
            )
    shutil.rmtree(root, ignore_errors=True)
    return result


def main(address: str, workdir: str) -> None:
    channel = grpc.insecure_channel(address)
    cas = Cas(channel)
    bots = bots_pb2_grpc.BotsStub(channel)
    session = bots.CreateBotSession(
        bots_pb2.CreateBotSessionRequest(
            parent="",
            bot_session=bots_pb2.BotSession(
                bot_id=f"oracle-gate-e2e-bot-{os.getpid()}",
                status=bots_pb2.BotStatus.OK,
                worker=worker_pb2.Worker(devices=[worker_pb2.Device(handle="local")]),
            ),
        )
    )
    print(f"bot session {session.name}", flush=True)
    while True:
        for lease in session.leases:
            if lease.state != bots_pb2.LeaseState.ACTIVE:
                continue
            action = re.Action()
            if lease.payload.Is(re.Action.DESCRIPTOR):
                lease.payload.Unpack(action)
            else:
                digest = re.Digest()
                lease.payload.Unpack(digest)
                action = cas.message(digest, re.Action)
            result = execute(cas, action, Path(workdir))
            print(f"executed lease {lease.id}: exit {result.exit_code}", flush=True)
            lease.result.Pack(result)
            lease.state = bots_pb2.LeaseState.COMPLETED
            lease.status.code = 0
        update = bots_pb2.UpdateBotSessionRequest(name=session.name, bot_session=session)
        session = retried(bots.UpdateBotSession, update)
        if not session.leases:
            time.sleep(0.2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
