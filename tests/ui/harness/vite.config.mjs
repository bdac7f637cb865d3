// Builds the protocol test harness: one page on the unmodified useAgent / useAgentChat hooks,
// driven by tests/ui/test_protocol_conformance.py. The packages come from web/node_modules (a
// link made by the tests), so the harness runs exactly the client versions the shipped UI pins.
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  plugins: [react()],
  base: "./",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("./dist", import.meta.url)),
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2000,
  },
});
