#!/usr/bin/env python3
"""A support person's path through the console, in a real headless Chromium (Selenium with
Debian's chromedriver): sign in, find a user, open an event, replay it with a reason and
confirm, see the replay on the event page; then, as an admin, find it in the audit log.

Run by ConsoleBrowserTests against a live server; prints one JSON line with what it saw.
Usage: console_flow.py BASE_URL SUPPORT_TOKEN ADMIN_TOKEN USER_ID EVENT_ID REASON SCREENSHOT_DIR
"""
import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def arrive(driver, check, what):
    """Waits for the navigation a click or submit started (the click returns before it ends)."""
    WebDriverWait(driver, 15).until(lambda d: check(d.current_url), message="did not reach " + what)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    driver_path = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def sign_in(driver, base, token):
    driver.get(base + "/console")
    arrive(driver, lambda url: url.endswith("/console/sign-in"), "the sign-in page")
    driver.find_element(By.NAME, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button").click()
    arrive(driver, lambda url: url.endswith("/console"), "the console after signing in")


def main():
    base, support, admin, user_id, event_id, reason, shots = sys.argv[1:8]
    driver = browser()
    seen = {}
    try:
        started = time.monotonic()
        sign_in(driver, base, support)
        # A user id → the timeline.
        search = driver.find_element(By.NAME, "q")
        search.send_keys(user_id)
        search.submit()
        arrive(driver, lambda url: "/console/users/" in url, "the timeline")
        seen["timeline_lists_event"] = event_id in driver.page_source
        seen["timeline_badge"] = driver.find_element(By.CSS_SELECTOR, "td .badge").text
        driver.save_screenshot(os.path.join(shots, "console-timeline.png"))
        # The event → replay with a reason → confirm.
        driver.find_element(By.LINK_TEXT, event_id).click()
        arrive(driver, lambda url: "/console/events/" in url, "the event page")
        driver.find_element(By.NAME, "reason").send_keys(reason)
        driver.find_element(By.XPATH, "//button[contains(., 'Review replay')]").click()
        arrive(driver, lambda url: url.endswith("/replay"), "the replay confirmation")
        seen["confirmation"] = driver.find_element(By.TAG_NAME, "h1").text
        driver.save_screenshot(os.path.join(shots, "console-confirm.png"))
        driver.find_element(By.XPATH, "//button[contains(., 'Replay now')]").click()
        arrive(driver, lambda url: "replayed=" in url, "the event page after the replay")
        seen["seconds_to_replay"] = round(time.monotonic() - started, 2)
        notice = driver.find_element(By.CSS_SELECTOR, ".notice").text
        seen["notice"] = notice
        seen["replay_id"] = next(word.rstrip(":") for word in notice.split() if word.startswith("rpl_"))
        seen["event_page_shows_replay"] = seen["replay_id"] in driver.find_element(By.TAG_NAME, "main").text
        driver.save_screenshot(os.path.join(shots, "console-event.png"))
        seen["scripts_in_pages"] = len(driver.find_elements(By.TAG_NAME, "script"))
        # Sign out; an admin reads the audit log.
        driver.find_element(By.XPATH, "//button[contains(., 'Sign out')]").click()
        arrive(driver, lambda url: url.endswith("/console/sign-in"), "the sign-in page after signing out")
        sign_in(driver, base, admin)
        driver.find_element(By.LINK_TEXT, "Audit log").click()
        arrive(driver, lambda url: "/console/audit" in url, "the audit log")
        rows = [row.text for row in driver.find_elements(By.CSS_SELECTOR, "tbody tr")]
        seen["audit_row"] = next((row for row in rows if "event.replay" in row), None)
        seen["cookies"] = [{"name": c["name"], "httpOnly": c.get("httpOnly"), "sameSite": c.get("sameSite")}
                           for c in driver.get_cookies()]
    finally:
        driver.quit()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
