# SPDX-License-Identifier: MIT
"""A small client of Chromium's DevTools protocol over --remote-debugging-pipe (no network, no port): the
browser reads NUL-terminated JSON commands from fd 3 and writes replies and events to fd 4. Enough for the
HTML report's test: open a file, evaluate JavaScript, move and click the mouse, take screenshots."""
import base64
import json
import os
import shutil
import subprocess
import time


class CdpError(Exception):
    pass


class Browser:
    def __init__(self, user=None, width=1600, height=1100, profile=None):
        chromium = shutil.which("chromium")
        if not chromium:
            raise CdpError("chromium is not installed (scripts/install-deps.sh)")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        # Chromium's own sandbox stays on: as root, the browser runs as `user` (it refuses root with it).
        cmd = [chromium, "--headless=new", "--remote-debugging-pipe", "--no-first-run",
               "--no-default-browser-check", "--disable-gpu", "--user-data-dir=" + profile,
               "--window-size=%d,%d" % (width, height), "about:blank"]
        if user:
            cmd = ["runuser", "-u", user, "--", "env", "HOME=" + profile] + cmd
        # The pipe's ends become fds 3 and 4 of the browser (a shell's redirections, since subprocess
        # closes every fd it is not told to keep after any preexec_fn could have placed them).
        cmd = ["sh", "-c", 'exec "$@" 3<&%d 4>&%d' % (to_browser_r, from_browser_w), "sh"] + cmd
        self.proc = subprocess.Popen(cmd, pass_fds=(to_browser_r, from_browser_w), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0
        self.session = None
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def _read(self, timeout):
        end = time.monotonic() + timeout
        while b"\0" not in self._buf:
            if time.monotonic() > end:
                raise CdpError("no reply from chromium within %d s" % timeout)
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CdpError("chromium closed its pipe (exit status %s)" % self.proc.poll())
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, timeout=60, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(timeout)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise CdpError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise CdpError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_for(self, expr, what, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.05)
        raise CdpError("%s: not within %d s" % (what, timeout))

    def open(self, url):
        self.call("Page.navigate", url=url)

    def mouse(self, kind, x, y, button="none", clicks=0):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button, clickCount=clicks)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, "left", 1)
        self.mouse("mouseReleased", x, y, "left", 1)

    def drag(self, x0, y0, x1, y1, steps=8):
        self.mouse("mouseMoved", x0, y0)
        self.mouse("mousePressed", x0, y0, "left", 1)
        for k in range(1, steps + 1):
            self.mouse("mouseMoved", x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps, "left")
        self.mouse("mouseReleased", x1, y1, "left", 1)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except CdpError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
