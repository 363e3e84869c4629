/**
 * Interim: the tasks and auth contracts are still being committed to proto. These mirror
 * proto/src/tasks.ts and proto/src/auth.ts as declared there; types.ts switches to importing them
 * from proto once they are on main, and this file goes away.
 */
export interface Task {
  id: string;
  userId: string;
  topicId: string | null;
  title: string;
  notes: string | null;
  type: 'ONE_TIME' | 'RECURRING' | 'DAILY_ELIGIBLE';
  priority: 'HIGH' | 'NORMAL' | 'SOMEDAY';
  recurrenceType: 'INTERVAL' | 'WEEKDAY' | 'MONTHLY' | 'YEARLY' | 'NTH_WEEKDAY' | null;
  recurrenceInterval: number | null;
  recurrenceWeekdays: number[] | null;
  recurrenceWeekOfMonth: number | null;
  recurrenceFixed: boolean;
  dueDate: string | null;
  nextDueDate: string | null;
  completedAt: string | null;
  snoozedUntil: string | null;
  postponeCount: number;
  estimatedMinutes: number | null;
  energyLevel: 'HIGH' | 'MEDIUM' | 'LOW' | null;
  sortOrder: number;
  coinValue: number;
  isDailyQuest: boolean;
  dailyQuestDate: string | null;
  blocked: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface Topic {
  id: string;
  userId: string;
  title: string;
  description: string | null;
  color: string | null;
  icon: string | null;
  priority: 'HIGH' | 'NORMAL' | 'SOMEDAY';
  archived: boolean;
  sequential: boolean;
  defaultEnergyLevel: 'HIGH' | 'MEDIUM' | 'LOW' | null;
  sortOrder: number;
  taskCount: number;
  openTaskCount: number;
  createdAt: string;
  updatedAt: string;
}

export interface Profile {
  userId: string;
  timezone: string;
  coins: number;
  totalTasksCreated: number;
  vacationEndDate: string | null;
  postponeLimit: number;
  createdAt: string;
}

export interface AdminStats {
  generatedAt: string;
  users: { total: number; new7d: number; new30d: number; active7d: number; active30d: number; byProvider: { provider: string; users: number }[]; withSecondFactor: number };
  tasks: {
    tasksTotal: number | null;
    tasksOpen: number | null;
    tasksCompleted: number | null;
    completionsTotal: number | null;
    completions7d: number | null;
    completions30d: number | null;
    usersWithTasks: number | null;
    averageTasksPerUser: number | null;
  } | null;
  cron: unknown;
  update: unknown;
}
