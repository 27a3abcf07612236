#!/usr/bin/env python3
"""A TCP proxy on loopback in front of PostgreSQL that counts the statements sent through it.

Usage: statement_counter.py TARGET_PORT COUNT_FILE

Prints the port it listens on (127.0.0.1), then forwards every connection to
127.0.0.1:TARGET_PORT. It reads the frontend side of the PostgreSQL protocol (v3, without
TLS: the client must use sslmode=disable) and counts each statement a client runs: a simple
Query ('Q') or an extended-protocol Execute ('E'). After every change it writes the total to
COUNT_FILE, so a test reads how many statements ran between two moments.
"""
import asyncio
import os
import struct
import sys

TARGET_PORT = int(sys.argv[1])
COUNT_FILE = sys.argv[2]
total = 0


def record(count):
    global total
    total += count
    temporary = COUNT_FILE + ".tmp"
    with open(temporary, "w") as out:
        out.write(str(total))
    os.replace(temporary, COUNT_FILE)


async def frontend(reader, writer):
    """Client to server: the startup packet (no type byte), then typed messages."""
    buffer = b""
    started = False
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
            buffer += data
            statements = 0
            while True:
                if not started:
                    if len(buffer) < 4:
                        break
                    (length,) = struct.unpack("!I", buffer[:4])
                    if len(buffer) < length:
                        break
                    code = struct.unpack("!I", buffer[4:8])[0] if length >= 8 else 0
                    buffer = buffer[length:]
                    # An SSLRequest or GSSENCRequest is answered 'N' and followed by the startup.
                    started = code not in (80877103, 80877104)
                    continue
                if len(buffer) < 5:
                    break
                kind = buffer[0:1]
                (length,) = struct.unpack("!I", buffer[1:5])
                if len(buffer) < 1 + length:
                    break
                buffer = buffer[1 + length:]
                if kind in (b"Q", b"E"):
                    statements += 1
            if statements:
                record(statements)
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def backend(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", TARGET_PORT)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(frontend(client_reader, server_writer), backend(server_reader, client_writer))


async def main():
    record(0)
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
