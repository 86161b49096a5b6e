// The operator console's browser suite, run by browser_test.go (TestConsoleInBrowser), which
// starts the deployment and sets the environment below. Debian's Chromium, headless, in a
// fresh profile for each run (Playwright's own temporary user-data directory).
const { defineConfig } = require('@playwright/test');
const path = require('path');

const artifacts = process.env.ARTIFACTS || path.join(__dirname, 'artifacts');

module.exports = defineConfig({
  testDir: __dirname,
  testMatch: /.*\.spec\.js/,
  outputDir: path.join(artifacts, 'results'),
  timeout: 15 * 60 * 1000,
  expect: { timeout: 15 * 1000 },
  workers: 1,
  retries: 0,
  reporter: [['list']],
  use: {
    baseURL: process.env.CONSOLE_URL,
    headless: true,
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
    acceptDownloads: true,
    launchOptions: {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run'],
    },
  },
});
