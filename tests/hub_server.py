#!/usr/bin/env python3
"""A loopback server that answers as the Hugging Face Hub does, for tests/test_hub_download.

  tests/hub_server.py CONFIG PORT_FILE LOG_FILE
  tests/hub_server.py --repo ORG/NAME=DIR... PORT_FILE LOG_FILE   (each DIR the main branch of
                                                                    one repository)

CONFIG (JSON): {"repos": {"org/name": {"refs": {"main": COMMIT}, "commits": {COMMIT: DIR},
"token": "...", "bad_sha256": true, "drop_after": N, "slow": SECONDS, "size_error": N},
"old/name": {"moved_to": "org/name"}}}. Each commit's files are DIR's files.

  HEAD|GET /{org}/{name}/resolve/{revision}/{file}
    an LFS file (.safetensors, .bin): 302 to http://localhost:PORT/cdn/{sha256} (another host
    name than the endpoint's 127.0.0.1, as the Hub's CDN is another host) with X-Repo-Commit,
    X-Linked-Etag (the sha256; a wrong one with bad_sha256), X-Linked-Size and the pointer's ETag;
    any other file: 200 with ETag (git's blob id), X-Repo-Commit and the bytes. A repository with
    moved_to: 307 to the same path under the new name (relative, as the Hub redirects a renamed
    repository); size_error: an X-Linked-Size that many bytes off.
    401 (no token) or 403 (another token) with X-Error-Code GatedRepo for a repository with a
    token; 404 with X-Error-Code RepoNotFound, RevisionNotFound or EntryNotFound.
  GET /cdn/{sha256}?repo=org/name: the bytes, a Range "bytes=N-" answered 206; with drop_after,
    the repository's first request of each blob is cut after N bytes (the connection dropped
    mid-body); with slow, each answer waits SECONDS first.

Each request is logged as one line "METHOD PATH range=... auth=..." to LOG_FILE. It binds port 0
on 127.0.0.1 and writes the port to PORT_FILE once listening. A test fixture only.
"""
import hashlib
import http.server
import json
import os
import sys
import threading
import time
import urllib.parse


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(name):
    return name.endswith(".safetensors") or name.endswith(".bin")


class Hub:
    def __init__(self, config):
        self.repos = config["repos"]
        self.blobs = {}  # (repo, sha256) -> (bytes, repo settings)
        self.served = {}  # (repo, sha256) -> requests so far
        self.lock = threading.Lock()

    def file(self, repo, commit, name):
        path = os.path.join(self.repos[repo]["commits"][commit], name)
        # a file of a folder of the repository (a sentence-transformers module's), none outside
        if name.startswith("/") or ".." in name.split("/") or not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log(self):
        with open(self.server.log_path, "a") as f:
            f.write("%s %s range=%s auth=%s\n" % (self.command, self.path,
                                                 self.headers.get("Range", "-"),
                                                 self.headers.get("Authorization", "-")))

    def answer(self, status, headers, body=b"", length=None):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def refuse(self, status, code):
        self.answer(status, {"X-Error-Code": code}, code.encode())

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.log()
        hub = self.server.hub
        path = urllib.parse.urlparse(self.path).path
        if path.startswith("/cdn/"):
            query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            return self.cdn((query.get("repo", [""])[0], path[5:]))
        parts = path.split("/")
        if len(parts) < 6 or parts[3] != "resolve":
            return self.refuse(404, "EntryNotFound")
        repo = parts[1] + "/" + parts[2]
        revision = urllib.parse.unquote(parts[4])
        name = urllib.parse.unquote("/".join(parts[5:]))
        settings = hub.repos.get(repo)
        if settings is None:
            return self.refuse(404, "RepoNotFound")
        if "moved_to" in settings:  # a renamed repository: a relative redirect to its new name
            return self.answer(307, {"Location": "/%s/resolve/%s" % (
                settings["moved_to"], "/".join(parts[4:]))})
        if "token" in settings:
            auth = self.headers.get("Authorization")
            if auth is None:
                return self.refuse(401, "GatedRepo")
            if auth != "Bearer " + settings["token"]:
                return self.refuse(403, "GatedRepo")
        commit = settings["refs"].get(revision, revision)
        if commit not in settings["commits"]:
            return self.refuse(404, "RevisionNotFound")
        data = hub.file(repo, commit, name)
        if data is None:
            return self.refuse(404, "EntryNotFound")
        if not is_lfs(name):
            return self.answer(200, {"ETag": '"%s"' % git_blob_id(data), "X-Repo-Commit": commit},
                               data)
        sha = hashlib.sha256(data).hexdigest()
        with hub.lock:
            hub.blobs[(repo, sha)] = (data, settings)
        announced = ("0" * 64) if settings.get("bad_sha256") else sha
        self.answer(302, {"Location": "http://localhost:%d/cdn/%s?repo=%s" %
                          (self.server.port, sha, urllib.parse.quote(repo, safe="")),
                          "X-Repo-Commit": commit, "X-Linked-Etag": '"%s"' % announced,
                          "X-Linked-Size": str(len(data) + settings.get("size_error", 0)),
                          "ETag": 'W/"%s"' % git_blob_id(b"pointer " + sha.encode())})

    def cdn(self, key):
        hub = self.server.hub
        sha = key[1]
        with hub.lock:
            blob = hub.blobs.get(key)
            count = hub.served.get(key, 0)
            hub.served[key] = count + 1
        if blob is None:
            return self.refuse(404, "EntryNotFound")
        data, settings = blob
        start = 0
        r = self.headers.get("Range")
        if r and r.startswith("bytes=") and r.endswith("-"):
            start = int(r[6:-1])
        headers = {"ETag": '"cdn-%s"' % sha[:16], "Accept-Ranges": "bytes"}
        status = 200
        if start > 0:
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        body = data[start:]
        if settings.get("slow"):  # a download that takes a while: two clients overlap
            time.sleep(settings["slow"])
        drop = settings.get("drop_after")
        if drop is not None and count == 0 and self.command == "GET":
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:drop])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.answer(status, headers, body)


def repos_from_arguments(args):
    """--repo ORG/NAME=DIR ...: one commit per repository (the sha1 of its name), main at it."""
    repos = {}
    while len(args) >= 2 and args[0] == "--repo":
        name, folder = args[1].split("=", 1)
        commit = hashlib.sha1(name.encode()).hexdigest()
        repos[name] = {"refs": {"main": commit}, "commits": {commit: folder}}
        args = args[2:]
    return {"repos": repos}, args


def main():
    if sys.argv[1] == "--repo":
        config, rest = repos_from_arguments(sys.argv[1:])
        port_path, log_path = rest
    else:
        config_path, port_path, log_path = sys.argv[1:4]
        with open(config_path) as f:
            config = json.load(f)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.hub = Hub(config)
    server.port = server.server_address[1]
    server.log_path = log_path
    with open(port_path + ".tmp", "w") as f:
        f.write(str(server.port))
    os.rename(port_path + ".tmp", port_path)
    server.serve_forever()


if __name__ == "__main__":
    main()
