import { createRoot } from "react-dom/client";
import { ConsoleApp } from "./console-app.tsx";

createRoot(document.getElementById("root")!).render(<ConsoleApp />);
