#!/bin/bash
#PBS -a 2031-01-01T10:00:00
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
