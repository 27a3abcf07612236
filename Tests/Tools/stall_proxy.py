#!/usr/bin/env python3
"""A TCP proxy on loopback that can make its open connections go silent.

Usage: stall_proxy.py TARGET_PORT

Prints the port it listens on (127.0.0.1), then forwards every connection to
127.0.0.1:TARGET_PORT. On SIGUSR1, every connection open at that moment stops
forwarding in both directions while its sockets stay open: to either side it looks
like a peer that stopped answering without closing anything (a frozen host, or a
network path that drops packets). Connections made afterwards forward normally.
"""
import asyncio
import signal
import sys

TARGET_PORT = int(sys.argv[1])
open_connections = set()


class Connection:
    def __init__(self):
        self.silent = False


async def pump(reader, writer, connection):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if connection.silent:
                continue  # swallowed: nothing reaches the other side, nothing is closed
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    if not connection.silent:
        writer.close()


async def handle(client_reader, client_writer):
    connection = Connection()
    open_connections.add(connection)
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", TARGET_PORT)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pump(client_reader, server_writer, connection),
                         pump(server_reader, client_writer, connection))
    open_connections.discard(connection)


def silence():
    for connection in open_connections:
        connection.silent = True


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, silence)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
